/**
 * Alert webhooks end to end: a gateway (embedded database in a directory, so it can be restarted) with a global
 * webhook in its config and an account's own one through the admin API, a receiver on loopback, and simulated
 * vendors. A low balance, a key at its spend limit, an upstream that refuses the gateway's key: each reaches its
 * webhooks once, signed so that the documented recipe verifies it. A delivery the receiver refuses is retried from
 * the Postgres outbox after a restart and acknowledged exactly once; an operator can list deliveries and resend one.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { verifySignature } from "../../../src/app/alerts/AlertSignature.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

const SECRET = "whsec_config_secret_0123456789"
const ACCOUNT_SECRET = "whsec_account_secret_9876543210"

interface Received {
  readonly path: string
  readonly headers: Record<string, string | string[] | undefined>
  readonly body: string
  readonly answered: number
}

let receiver: Server
let receiverUrl: string
let answer = 200
const received: Array<Received> = []
let sim: RunningSimulator
let dir: string
let configPath: string
let gateway: TestGateway
let admin: Admin

const start = async () => {
  gateway = await startTestGateway({
    configPath,
    database: { kind: "pglite", dataDir: join(dir, "db") },
    fetchAllowHosts: ["127.0.0.1"]
  })
  admin = makeAdmin(gateway)
}

const waitFor = async <A>(what: string, probe: () => A | undefined, timeoutMs = 15_000): Promise<A> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const found = probe()
    if (found !== undefined) return found
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const events = (type: string, path = "/hook") =>
  received.filter((entry) => entry.path === path && (JSON.parse(entry.body) as { type: string }).type === type)

const chat = (key: string) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "plain", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 })
  })

beforeAll(async () => {
  receiver = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      received.push({
        path: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        answered: answer
      })
      response.writeHead(answer).end()
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve))
  const address = receiver.address()
  receiverUrl = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}`
  sim = await startSimulator()
  dir = mkdtempSync(join(tmpdir(), "tollgate-alerts-"))
  configPath = join(dir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  sim: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-sim-test-key" }
  revoked: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-revoked" }
models:
  - { id: plain, plugin: text, upstreams: [sim], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: fragile, plugin: text, upstreams: [revoked, sim], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
alerts:
  - { url: "${receiverUrl}/hook", events: ["*"], secret: "${SECRET}", balanceBelow: "0.999990" }
`
  )
  await start()
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  await sim?.close()
  await new Promise((resolve) => receiver?.close(resolve))
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("alerts", () => {
  it("a low balance reaches the webhook once per funding level, signed", async () => {
    const customer = await admin.customer({ deposit: "1.00" })
    for (let index = 0; index < 3; index++) assert.strictEqual((await chat(customer.key)).status, 200)
    const [first] = await waitFor("balance.low", () => {
      const found = events("balance.low").filter((entry) => entry.body.includes(customer.accountId))
      return found.length > 0 ? found : undefined
    })
    if (first === undefined) throw new Error("no event")
    const event = JSON.parse(first.body) as {
      id: string
      type: string
      accountId: string
      data: Record<string, string>
    }
    assert.strictEqual(event.accountId, customer.accountId)
    assert.strictEqual(event.data.threshold, "0.999990")
    assert.match(event.id, /^evt_[0-9a-f]{32}$/)
    assert.strictEqual(first.headers["x-tollgate-event-id"], event.id)
    assert.strictEqual(first.headers["x-tollgate-event-type"], "balance.low")
    const signature = String(first.headers["x-tollgate-signature"])
    assert.isTrue(verifySignature(SECRET, signature, first.body, Math.floor(Date.now() / 1000)))
    assert.isFalse(verifySignature("another-secret-0000", signature, first.body, Math.floor(Date.now() / 1000)))
    assert.isFalse(verifySignature(SECRET, signature, `${first.body} `, Math.floor(Date.now() / 1000)))
    assert.notInclude(JSON.stringify(first), SECRET)
    // More calls at the same funding level: no second alert.
    await chat(customer.key)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    assert.strictEqual(events("balance.low").filter((entry) => entry.body.includes(customer.accountId)).length, 1)
  })

  it("an account's own webhook hears its key reach the spend limit; the secret is never shown", async () => {
    const customer = await admin.customer({ deposit: "5.00" })
    const created = await admin.call("POST", `/admin/accounts/${customer.accountId}/alerts`, {
      url: `${receiverUrl}/account`,
      events: ["key.spend_limit_reached"],
      secret: ACCOUNT_SECRET
    })
    assert.strictEqual(created.status, 201, JSON.stringify(created.body))
    assert.notInclude(JSON.stringify(created.body), ACCOUNT_SECRET)
    const listed = await admin.call("GET", `/admin/accounts/${customer.accountId}/alerts`)
    assert.notInclude(JSON.stringify(listed.body), ACCOUNT_SECRET)
    const key = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, {
      name: "capped",
      spendLimit: "0.000001"
    })
    const secretKey = (key.body as { key: string }).key
    assert.strictEqual((await chat(secretKey)).status, 402)
    assert.strictEqual((await chat(secretKey)).status, 402)
    const [hit] = await waitFor("key.spend_limit_reached", () => {
      const found = events("key.spend_limit_reached", "/account")
      return found.length > 0 ? found : undefined
    })
    assert.isTrue(
      verifySignature(ACCOUNT_SECRET, String(hit?.headers["x-tollgate-signature"]), hit?.body ?? "", Date.now() / 1000)
    )
    assert.include(hit?.body ?? "", (key.body as { id: string }).id)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    assert.strictEqual(events("key.spend_limit_reached", "/account").length, 1)
    // The global webhook subscribes to everything: it hears it too.
    assert.strictEqual(events("key.spend_limit_reached").length, 1)
    // Bad endpoints are refused with the field named.
    const bad = await admin.call("POST", `/admin/accounts/${customer.accountId}/alerts`, {
      url: "ftp://x",
      events: ["nope"],
      secret: "short"
    })
    assert.strictEqual(bad.status, 400)
  })

  it("a finished batch is announced once, signed, with its counts and money as decimal strings", async () => {
    const customer = await admin.customer({ deposit: "5.00" })
    const created = await admin.call("POST", `/admin/accounts/${customer.accountId}/alerts`, {
      url: `${receiverUrl}/batches`,
      events: ["batch.completed", "batch.failed"],
      secret: ACCOUNT_SECRET
    })
    assert.strictEqual(created.status, 201, JSON.stringify(created.body))
    const submitted = await fetch(`${gateway.url}/v1/messages/batches`, {
      method: "POST",
      headers: { "x-api-key": customer.key, "content-type": "application/json" },
      body: JSON.stringify({
        requests: ["a", "b"].map((id) => ({
          custom_id: id,
          params: { model: "plain", max_tokens: 8, messages: [{ role: "user", content: "Hi" }] }
        }))
      })
    })
    assert.strictEqual(submitted.status, 200)
    const batchId = ((await submitted.json()) as { id: string }).id
    const ofBatch = (path: string) => events("batch.completed", path).filter((entry) => entry.body.includes(batchId))
    const [hit] = await waitFor("batch.completed", () =>
      ofBatch("/batches").length > 0 ? ofBatch("/batches") : undefined
    )
    assert.isTrue(
      verifySignature(ACCOUNT_SECRET, String(hit?.headers["x-tollgate-signature"]), hit?.body ?? "", Date.now() / 1000)
    )
    const event = JSON.parse(hit?.body ?? "{}") as { accountId: string; data: Record<string, unknown> }
    assert.strictEqual(event.accountId, customer.accountId)
    assert.deepInclude(event.data, {
      batchId,
      accountId: customer.accountId,
      keyId: customer.keyId,
      status: "completed",
      requestCounts: { total: 2, completed: 2, failed: 0 }
    })
    assert.match(String(event.data.charged), /^0\.\d{6}$/)
    assert.match(String(event.data.refunded), /^0\.\d{6}$/)
    const view = await admin.call("GET", `/admin/batches/${batchId}`)
    assert.strictEqual(event.data.charged, view.body.charged)
    assert.strictEqual(event.data.refunded, view.body.refunded)
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    assert.strictEqual(ofBatch("/batches").length, 1)
    assert.strictEqual(ofBatch("/hook").length, 1)
  })

  it("an upstream disabled for refused credentials is announced to the operator's webhook", async () => {
    const customer = await admin.customer({ deposit: "5.00" })
    assert.strictEqual((await chat(customer.key)).status, 200)
    const response = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "fragile", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 })
    })
    assert.strictEqual(response.status, 200)
    const [event] = await waitFor("deployment.disabled", () => {
      const found = events("deployment.disabled")
      return found.length > 0 ? found : undefined
    })
    const body = JSON.parse(event?.body ?? "{}") as { accountId: string | null; data: Record<string, unknown> }
    assert.isNull(body.accountId)
    assert.strictEqual(body.data.upstream, "revoked")
    assert.notInclude(event?.body ?? "", "sk-revoked")
  })

  it("a delivery the receiver refused survives a restart and is acknowledged exactly once; an operator can resend it", async () => {
    answer = 503
    const customer = await admin.customer({ deposit: "1.00" })
    // A call costs a few micro-dollars: three take the balance below the threshold (0.999990).
    for (let index = 0; index < 3; index++) assert.strictEqual((await chat(customer.key)).status, 200)
    const refused = await waitFor("a refused attempt", () =>
      received.find((entry) => entry.body.includes(customer.accountId) && entry.answered === 503)
    )
    const eventId = String(refused.headers["x-tollgate-event-id"])
    const pending = await admin.call("GET", `/admin/alerts/deliveries?accountId=${customer.accountId}&status=pending`)
    const rows = (pending.body as unknown as { data: Array<{ id: string; attempts: number; lastStatus: number }> }).data
    assert.strictEqual(rows.length, 1)
    assert.strictEqual(rows[0]?.lastStatus, 503)
    await gateway.close()
    answer = 200
    await start()
    const acknowledged = await waitFor(
      "the retried delivery",
      () => {
        const hits = received.filter(
          (entry) => entry.headers["x-tollgate-event-id"] === eventId && entry.answered === 200
        )
        return hits.length > 0 ? hits : undefined
      },
      20_000
    )
    assert.strictEqual(acknowledged.length, 1)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    assert.strictEqual(
      received.filter((entry) => entry.headers["x-tollgate-event-id"] === eventId && entry.answered === 200).length,
      1
    )
    const delivered = await admin.call("GET", `/admin/alerts/deliveries?accountId=${customer.accountId}`)
    const row = (delivered.body as unknown as { data: Array<{ id: string; status: string; attempts: number }> }).data[0]
    assert.strictEqual(row?.status, "delivered")
    assert.isAtLeast(row?.attempts ?? 0, 2)
    // An operator's resend sends the same event (same id) once more.
    const resent = await admin.call("POST", `/admin/alerts/deliveries/${row?.id}/resend`)
    assert.strictEqual(resent.status, 200)
    await waitFor("the resent delivery", () => {
      const hits = received.filter(
        (entry) => entry.headers["x-tollgate-event-id"] === eventId && entry.answered === 200
      )
      return hits.length === 2 ? hits : undefined
    })
    assert.strictEqual(
      (await admin.call("POST", "/admin/alerts/deliveries/00000000-0000-4000-8000-000000000000/resend")).status,
      404
    )
  })
})
