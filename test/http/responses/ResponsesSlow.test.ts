/**
 * `/v1/responses` against slow upstreams: a stream the client cuts is billed for what was delivered and stored (as
 * failed) with it, so what is billed can be retrieved; a background response cancelled while its upstream is still thinking releases its whole hold.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { assertBilled, settledLedger } from "../chat/Billing.ts"
import { type Admin, closeAfterReplay, makeAdmin } from "../chat/ChatHarness.ts"

let gateway: TestGateway
let admin: Admin
let dripping: RunningSimulator
let thinking: RunningSimulator
let breaking: RunningSimulator
let dir: string

beforeAll(async () => {
  dripping = await startSimulator({ faults: { chunkDelayMs: 40, replyTokens: 400 } })
  thinking = await startSimulator({ faults: { latencyMs: 5_000 } })
  breaking = await startSimulator({ faults: { cutAfter: 8, replyTokens: 400 } })
  dir = mkdtempSync(join(tmpdir(), "tollgate-responses-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  dripping: { protocol: openai-responses, baseUrl: "${dripping.baseUrl}/v1", apiKey: "sk-sim-test-key" }
  thinking: { protocol: anthropic, baseUrl: "${thinking.baseUrl}", apiKey: "sk-sim-test-key" }
  breaking: { protocol: anthropic, baseUrl: "${breaking.baseUrl}", apiKey: "sk-sim-test-key" }
  breaking-responses: { protocol: openai-responses, baseUrl: "${breaking.baseUrl}/v1", apiKey: "sk-sim-test-key" }
models:
  - { id: dripping, plugin: text, upstreams: [dripping], upstreamModel: sim-responses, pricing: { input: "0.15", output: "0.60" } }
  - { id: breaking, plugin: text, upstreams: [breaking], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
  - { id: breaking-responses, plugin: text, upstreams: [breaking-responses], upstreamModel: sim-responses, pricing: { input: "0.15", output: "0.60" } }
  - { id: thinking, plugin: text, upstreams: [thinking], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
`
  )
  gateway = await startTestGateway({ configPath })
  admin = makeAdmin(gateway)
}, 60_000)

afterAll(async () => {
  await closeAfterReplay({ admin, close: () => gateway.close() })
  await dripping.close()
  await thinking.close()
  await breaking.close()
  rmSync(dir, { recursive: true, force: true })
})

const post = (key: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal === undefined ? {} : { signal })
  })

describe("slow upstreams", () => {
  it("a stream the client cuts is billed for what was delivered, and what was delivered is stored", async () => {
    const customer = await admin.customer()
    const controller = new AbortController()
    const response = await post(
      customer.key,
      { model: "dripping", input: "Tell me a long story", stream: true },
      controller.signal
    )
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    let seen = ""
    while ((seen.match(/response\.output_text\.delta/g) ?? []).length < 3) {
      const { value, done } = await reader.read()
      if (done) break
      seen += new TextDecoder().decode(value)
    }
    controller.abort()
    const id = /"id":"(resp_[0-9a-f]+)"/.exec(seen)?.[1] as string
    assert.isDefined(id)
    const entries = await settledLedger(admin, customer.accountId)
    const hold = entries.find((e) => e.type === "HoldPlaced")
    const usage = entries.find((e) => e.holdId === hold?.holdId && e.type === "UsageRecalculated")
    assert.isDefined(usage, `billed for what was delivered: ${JSON.stringify(entries.map((e) => e.type))}`)
    assert.isAbove(Number(usage?.amount ?? "0"), 0)
    assert.isBelow(Number(usage?.amount ?? "0"), Number(hold?.amount ?? "0"), "less than the whole hold")
    const stored = await fetch(`${gateway.url}/v1/responses/${id}`, {
      headers: { authorization: `Bearer ${customer.key}` }
    })
    assert.strictEqual(stored.status, 200, "what was billed can be retrieved")
    const body = (await stored.json()) as {
      status: string
      output: ReadonlyArray<{ content?: ReadonlyArray<{ text: string }> }>
    }
    assert.strictEqual(body.status, "failed")
    assert.isAbove(body.output[0]?.content?.[0]?.text.length ?? 0, 0, "with the text that was delivered")
  })

  for (const model of ["breaking", "breaking-responses"]) {
    it(`${model}: a stream the upstream cuts ends with response.failed, is billed for what was delivered, stored as failed`, async () => {
      const customer = await admin.customer()
      const response = await post(customer.key, { model, input: "Tell me a long story", stream: true })
      const text = await response.text()
      const events = text
        .split("\n\n")
        .flatMap((frame) => frame.split("\n").filter((line) => line.startsWith("data: ")))
        .map((line) => JSON.parse(line.slice(6)) as { type: string; response?: { id: string; status: string } })
      const last = events.at(-1)
      assert.strictEqual(last?.type, "response.failed")
      assert.strictEqual(last?.response?.status, "failed")
      const entries = await settledLedger(admin, customer.accountId)
      const usage = entries.find((e) => e.type === "UsageRecalculated")
      assert.isDefined(usage, `billed for what was delivered: ${JSON.stringify(entries.map((e) => e.type))}`)
      const stored = await fetch(`${gateway.url}/v1/responses/${last?.response?.id}`, {
        headers: { authorization: `Bearer ${customer.key}` }
      })
      assert.strictEqual(stored.status, 200)
      assert.strictEqual(((await stored.json()) as { status: string }).status, "failed")
    })
  }

  it("a background response cancelled before its upstream answers releases its whole hold", async () => {
    const customer = await admin.customer()
    const queued = (await (
      await post(customer.key, { model: "thinking", input: "slowly", background: true })
    ).json()) as {
      id: string
      status: string
    }
    assert.strictEqual(queued.status, "queued")
    const cancelled = await fetch(`${gateway.url}/v1/responses/${queued.id}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}` }
    })
    assert.strictEqual(cancelled.status, 200)
    assert.strictEqual(((await cancelled.json()) as { status: string }).status, "cancelled")
    const again = (await (
      await fetch(`${gateway.url}/v1/responses/${queued.id}`, { headers: { authorization: `Bearer ${customer.key}` } })
    ).json()) as { status: string }
    assert.strictEqual(again.status, "cancelled")
    await assertBilled(admin, customer, [
      { requestId: undefined, model: "thinking", outcome: { _tag: "Released", reason: "cancelled" } }
    ])
  })
})
