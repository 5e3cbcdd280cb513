/**
 * Stored responses through a database cut (real Postgres behind a TCP proxy that drops every connection): a stream,
 * a JSON response and a background response whose storage fails are not delivered as stored — the client is told
 * (`response_not_stored`) and nothing is charged — and every background response reaches a final state once the
 * database is back, within the lease time; a response finished while the database is up is billed and retrievable.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { type Outage, outageBefore } from "../../support/Outage.ts"
import { runPostgres } from "../../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { settledLedger } from "../chat/Billing.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

const baseUrl = process.env.TEST_DATABASE_URL
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

type Json = Record<string, unknown>

/** The events of an SSE body (comment lines skipped). */
const eventsOf = (text: string): ReadonlyArray<Json> =>
  text
    .split("\n\n")
    .flatMap((frame) => frame.split("\n").filter((line) => line.startsWith("data: ")))
    .map((line) => JSON.parse(line.slice(6)) as Json)

describe.skipIf(baseUrl === undefined)("stored responses through a database cut (real Postgres)", () => {
  const database = `tollgate_t_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  let gateway: TestGateway
  let admin: Admin
  let outage: Outage
  let slow: RunningSimulator
  let thinking: RunningSimulator
  let dir: string

  beforeAll(async () => {
    await runPostgres(baseUrl as string, `CREATE DATABASE ${database}`)
    const direct = new URL(baseUrl as string)
    direct.pathname = `/${database}`
    const proxied = await outageBefore(direct.toString(), 20_000 + Math.floor(Math.random() * 20_000))
    outage = proxied.outage
    // Streams of 30 events 100 ms apart (3 s); answers that take 2.5 s to start.
    slow = await startSimulator({ faults: { chunkDelayMs: 100 }, replyTokens: 30 })
    thinking = await startSimulator({ faults: { latencyMs: 2_500 } })
    dir = mkdtempSync(join(tmpdir(), "tollgate-responses-outage-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(
      configPath,
      `
upstreams:
  slow-responses: { protocol: openai-responses, baseUrl: "${slow.baseUrl}/v1", apiKey: "sk-sim-test-key" }
  thinking: { protocol: anthropic, baseUrl: "${thinking.baseUrl}", apiKey: "sk-sim-test-key" }
models:
  - { id: slow-responses, plugin: text, upstreams: [slow-responses], upstreamModel: sim-responses, pricing: { input: "0.15", output: "0.60" } }
  - { id: thinking, plugin: text, upstreams: [thinking], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
`
    )
    gateway = await startTestGateway({
      configPath,
      database: { kind: "postgres", url: Redacted.make(proxied.url) },
      responses: { leaseMillis: 2_000, renewMillis: 300, pollMillis: 200 }
    })
    admin = makeAdmin(gateway)
  }, 60_000)

  afterAll(async () => {
    await gateway?.close()
    await outage?.down()
    await slow?.close()
    await thinking?.close()
    await runPostgres(baseUrl as string, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const post = (key: string, body: Json) =>
    fetch(`${gateway.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    })

  const get = async (key: string, path: string) => {
    const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${key}` } })
    return { status: response.status, body: (await response.json()) as Json }
  }

  /** Nothing was charged: every hold went back whole. */
  const assertNothingCharged = async (accountId: string) => {
    const entries = await settledLedger(admin, accountId)
    assert.isUndefined(
      entries.find((e) => e.type === "UsageRecalculated"),
      `nothing may be charged: ${JSON.stringify(entries.map((e) => e.type))}`
    )
    const holds = entries.filter((e) => e.type === "HoldPlaced")
    assert.isAbove(holds.length, 0)
    for (const hold of holds) {
      const refund = entries.find((e) => e.holdId === hold.holdId && e.type === "RefundIssued")
      assert.strictEqual(refund?.amount, hold.amount, "the whole hold went back")
    }
  }

  it("a stream whose response cannot be stored ends in response.failed (response_not_stored), charged nothing", async () => {
    const customer = await admin.customer()
    const response = await post(customer.key, { model: "slow-responses", input: "Tell me a story", stream: true })
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    let text = ""
    while (!text.includes("response.output_text.delta")) {
      const { value, done } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    await outage.down()
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      text += new TextDecoder().decode(value)
    }
    await outage.up()
    const last = eventsOf(text).at(-1) as Json
    assert.strictEqual(last.type, "response.failed", text.slice(-400))
    const failed = last.response as { id: string; error: { code: string } }
    assert.strictEqual(failed.error.code, "response_not_stored")
    assert.strictEqual((await get(customer.key, `/v1/responses/${failed.id}`)).status, 404)
    await assertNothingCharged(customer.accountId)
  }, 60_000)

  it("a JSON response that cannot be stored is a 503 response_not_stored, charged nothing", async () => {
    const customer = await admin.customer()
    const pending = post(customer.key, { model: "thinking", input: "Hello" })
    await sleep(800) // its hold is committed and its upstream is thinking
    await outage.down()
    const response = await pending
    await outage.up()
    assert.strictEqual(response.status, 503)
    const body = (await response.json()) as { error: { code: string } }
    assert.strictEqual(body.error.code, "response_not_stored")
    await assertNothingCharged(customer.accountId)
  }, 60_000)

  it("a background response cut off from the database fails once it is back (within the lease), charged nothing", async () => {
    const customer = await admin.customer()
    const created = await post(customer.key, { model: "thinking", input: "Hello", background: true })
    assert.strictEqual(created.status, 200)
    const { id } = (await created.json()) as { id: string }
    await sleep(800) // claimed, running
    await outage.down()
    await sleep(4_000) // the call ends meanwhile: its response cannot be stored
    await outage.up()
    let status = ""
    const started = Date.now()
    while (Date.now() - started < 15_000) {
      const found = await get(customer.key, `/v1/responses/${id}`).catch(() => undefined)
      status = String(found?.body.status ?? "")
      if (["completed", "failed", "cancelled", "incomplete"].includes(status)) break
      await sleep(200)
    }
    assert.strictEqual(status, "failed", "a final state within the lease after the database is back")
    await assertNothingCharged(customer.accountId)
    // The replay agrees: it ends with the same failure.
    const replay = await fetch(`${gateway.url}/v1/responses/${id}?stream=true`, {
      headers: { authorization: `Bearer ${customer.key}` }
    })
    const last = eventsOf(await replay.text()).at(-1) as Json
    assert.strictEqual(last.type, "response.failed")
    assert.strictEqual((last.response as Json).status, "failed")
  }, 60_000)

  it("a background response finished with the database up is billed once and retrievable", async () => {
    const customer = await admin.customer()
    const created = await post(customer.key, { model: "thinking", input: "Hello", background: true })
    const { id } = (await created.json()) as { id: string }
    let found = await get(customer.key, `/v1/responses/${id}`)
    while (found.body.status === "queued" || found.body.status === "in_progress") {
      await sleep(200)
      found = await get(customer.key, `/v1/responses/${id}`)
    }
    assert.strictEqual(found.body.status, "completed")
    assert.isAbove((found.body.output as ReadonlyArray<unknown>).length, 0)
    const entries = await settledLedger(admin, customer.accountId)
    assert.strictEqual(entries.filter((e) => e.type === "UsageRecalculated").length, 1)
  }, 60_000)
})
