/**
 * Per-key rate limits (`rateLimits: {rpm, tpm, concurrency}` on key creation, defaults in the operator config): a
 * refusal is a 429 with `retry-after` in the envelope of the protocol called, before anything is held. Run with the
 * limits kept in process and shared through Redis (REDIS_URL, else the local 127.0.0.1:6379); with Redis, two
 * gateway instances on one Postgres share one key's budget.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { redisAnswers, redisUrl } from "../support/Redis.ts"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { type Admin, makeAdmin } from "../http/chat/ChatHarness.ts"
import { createPostgresDatabase } from "../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const redisUp = await redisAnswers()
if (!redisUp) console.warn(`[tollgate] no Redis at ${redisUrl}: the shared rate-limit suites are skipped`)

const configYaml = (sim: string) => `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-anthropic: { protocol: anthropic, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-anthropic, plugin: text, upstreams: [sim-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
rateLimits: { rpm: 5 }
`

const chat = (gateway: TestGateway, key: string, options: { stream?: boolean } = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "sim-openai",
      messages: [{ role: "user", content: "Say something" }],
      max_tokens: 20,
      ...(options.stream === true ? { stream: true } : {})
    })
  })

/** Asserts a 200 and reads the body to its end (a streamed or settled call is then complete). */
const expectOk = async (pending: Promise<Response>) => {
  const response = await pending
  const text = await response.text()
  assert.strictEqual(response.status, 200, text)
}

const messages = (gateway: TestGateway, key: string) =>
  fetch(`${gateway.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
    body: JSON.stringify({ model: "sim-anthropic", max_tokens: 20, messages: [{ role: "user", content: "Hi" }] })
  })

interface Setup {
  readonly sim: RunningSimulator
  readonly dir: string
  readonly configPath: string
}

const setUp = async (): Promise<Setup> => {
  // Slow streams (50 ms between events) so a request can be kept in flight.
  const sim = await startSimulator({ faults: { chunkDelayMs: 50 } })
  const dir = mkdtempSync(join(tmpdir(), "tollgate-limits-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, configYaml(sim.baseUrl))
  return { sim, dir, configPath }
}

const newKey = async (admin: Admin, rateLimits?: Record<string, number | null>) => {
  const customer = await admin.customer({ deposit: "10" })
  if (rateLimits === undefined) return customer
  const key = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, { name: "limited", rateLimits })
  assert.strictEqual(key.status, 201, JSON.stringify(key.body))
  assert.deepStrictEqual(key.body.rateLimits, { rpm: null, tpm: null, concurrency: null, ...rateLimits })
  return { ...customer, keyId: key.body.id as string, key: key.body.key as string }
}

/** Windows are fixed UTC minutes: a test that counts within one waits out the last seconds of the current one. */
const awayFromMinuteEdge = async () => {
  const left = 60_000 - (Date.now() % 60_000)
  if (left < 5_000) await new Promise((resolve) => setTimeout(resolve, left + 50))
}

const holdsOf = async (admin: Admin, accountId: string) =>
  (await admin.ledger(accountId)).filter((entry) => entry.type === "HoldPlaced").length

for (const store of ["in-process", "redis"] as const) {
  describe.skipIf(store === "redis" && !redisUp)(`rate limits (${store})`, () => {
    let setup: Setup
    let gateway: TestGateway
    let admin: Admin

    beforeAll(async () => {
      setup = await setUp()
      gateway = await startTestGateway({
        configPath: setup.configPath,
        ...(store === "redis" ? { redisUrl } : {})
      })
      admin = makeAdmin(gateway)
    }, 60_000)
    afterAll(async () => {
      await gateway?.close()
      await setup?.sim.close()
      if (setup !== undefined) rmSync(setup.dir, { recursive: true, force: true })
    })

    it("rpm: the request past the key's minute budget is a 429 with retry-after, unbilled", async () => {
      await awayFromMinuteEdge()
      const customer = await newKey(admin, { rpm: 3 })
      for (let i = 0; i < 3; i++) await expectOk(chat(gateway, customer.key))
      const refused = await chat(gateway, customer.key)
      assert.strictEqual(refused.status, 429)
      const retryAfter = Number(refused.headers.get("retry-after"))
      assert.isAtLeast(retryAfter, 1)
      assert.isAtMost(retryAfter, 60)
      const body = await refused.json()
      assert.strictEqual(body.error.type, "rate_limit_error")
      assert.strictEqual(body.error.code, "rate_limit_exceeded")
      assert.include(body.error.message, "3 requests per minute")
      // In the messages protocol's own envelope, and nothing held for either refusal.
      const anthropic = await messages(gateway, customer.key)
      assert.strictEqual(anthropic.status, 429)
      const anthropicBody = await anthropic.json()
      assert.strictEqual(anthropicBody.type, "error")
      assert.strictEqual(anthropicBody.error.type, "rate_limit_error")
      assert.strictEqual(await holdsOf(admin, customer.accountId), 3)
    })

    it("a key without limits of its own gets the operator config's default (rpm 5)", async () => {
      await awayFromMinuteEdge()
      const customer = await newKey(admin)
      for (let i = 0; i < 5; i++) await expectOk(chat(gateway, customer.key))
      assert.strictEqual((await chat(gateway, customer.key)).status, 429)
    })

    it("concurrency: a second request while a stream is open is refused; after its end, admitted", async () => {
      const customer = await newKey(admin, { concurrency: 1, rpm: 100 })
      const open = await chat(gateway, customer.key, { stream: true })
      assert.strictEqual(open.status, 200)
      const reader = open.body?.getReader()
      await reader?.read()
      const second = await chat(gateway, customer.key)
      assert.strictEqual(second.status, 429)
      assert.include((await second.json()).error.message, "1 requests at a time")
      // Drain the stream to its end: the slot frees with the last byte.
      for (;;) {
        const { done } = (await reader?.read()) ?? { done: true }
        if (done) break
      }
      let after = await chat(gateway, customer.key)
      for (let i = 0; i < 20 && after.status === 429; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        after = await chat(gateway, customer.key)
      }
      assert.strictEqual(after.status, 200)
    })

    it("concurrency: a client that goes away mid-stream frees its slot", async () => {
      const customer = await newKey(admin, { concurrency: 1, rpm: 100 })
      const controller = new AbortController()
      const open = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        signal: controller.signal,
        headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "sim-openai",
          stream: true,
          max_tokens: 200,
          messages: [{ role: "user", content: "A long story please" }]
        })
      })
      await open.body?.getReader().read()
      controller.abort()
      let after = await chat(gateway, customer.key)
      for (let i = 0; i < 40 && after.status === 429; i++) {
        await new Promise((resolve) => setTimeout(resolve, 25))
        after = await chat(gateway, customer.key)
      }
      assert.strictEqual(after.status, 200)
    })

    it("tpm: once the minute's settled tokens reach the budget, the next request is refused", async () => {
      await awayFromMinuteEdge()
      const customer = await newKey(admin, { tpm: 10, rpm: 100 })
      await expectOk(chat(gateway, customer.key))
      const refused = await chat(gateway, customer.key)
      assert.strictEqual(refused.status, 429)
      assert.include((await refused.json()).error.message, "10 tokens per minute")
      assert.isAtLeast(Number(refused.headers.get("retry-after")), 1)
    })

    it("refuses a rate limit that is not a positive integer, naming it", async () => {
      const customer = await admin.customer({ deposit: "1" })
      for (const rateLimits of [{ rpm: 0 }, { tpm: -1 }, { concurrency: 1.5 }, { rpm: "10" }]) {
        const answer = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, {
          name: "bad",
          rateLimits
        })
        assert.strictEqual(answer.status, 400, JSON.stringify(rateLimits))
        assert.include(answer.body.error.message, `rateLimits.${Object.keys(rateLimits)[0]}`)
      }
    })
  })
}

const baseUrl = process.env.TEST_DATABASE_URL
describe.skipIf(!redisUp || baseUrl === undefined || baseUrl === "")("rate limits shared by two instances", () => {
  it("one key's rpm budget is spent across both gateways", { timeout: 120_000 }, async () => {
    await awayFromMinuteEdge()
    const setup = await setUp()
    const database = await createPostgresDatabase(baseUrl as string)
    const { Redacted } = await import("effect")
    const gateways: Array<TestGateway> = []
    try {
      for (let i = 0; i < 2; i++) {
        gateways.push(
          await startTestGateway({
            configPath: setup.configPath,
            redisUrl,
            database: { kind: "postgres", url: Redacted.make(database.url) },
            video: { enabled: false }
          })
        )
      }
      const [a, b] = gateways
      const customer = await newKey(makeAdmin(a), { rpm: 4 })
      const statuses: Array<number> = []
      for (const gateway of [a, b, a, b, a, b]) {
        const answer = await chat(gateway, customer.key)
        await answer.text()
        statuses.push(answer.status)
      }
      assert.deepStrictEqual(statuses, [200, 200, 200, 200, 429, 429])
    } finally {
      for (const gateway of gateways) await gateway.close()
      await database.drop()
      await setup.sim.close()
      rmSync(setup.dir, { recursive: true, force: true })
    }
  })
})
