/**
 * Prompt caching billed exactly, end to end: upstreams of each protocol report cache reads and writes in their own
 * fields (the simulator's cache knobs), the gateway reads them in JSON and in streams, bills cached tokens at the
 * model's cache prices (never also at `input`), records the split in the ledger's usage event, and tells each client
 * in its own protocol's fields.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { formatMicros } from "../../../src/domain/Money.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { settledLedger } from "./Billing.ts"
import { type Admin, type Customer, closeAfterReplay, makeAdmin } from "./ChatHarness.ts"
import type { Wire } from "./Fixtures.ts"

let gateway: TestGateway
let admin: Admin
let sim: RunningSimulator
let dir: string

const PRICES = {
  input: 3_000_000n,
  output: 15_000_000n,
  cacheRead: 300_000n,
  cacheWrite: 3_750_000n,
  cacheWrite1h: 6_000_000n
}
const KNOBS = { cacheReadTokens: 5, cacheWriteTokens: 3, cacheWrite1hTokens: 1 }

beforeAll(async () => {
  sim = await startSimulator({ faults: KNOBS })
  dir = mkdtempSync(join(tmpdir(), "tollgate-cache-"))
  const configPath = join(dir, "tollgate.yaml")
  const pricing = `{ input: "3.00", output: "15.00", cacheRead: "0.30", cacheWrite: "3.75", cacheWrite1h: "6.00" }`
  writeFileSync(
    configPath,
    `
upstreams:
  openai: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-sim-test-key" }
  responses: { protocol: openai-responses, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-sim-test-key" }
  anthropic: { protocol: anthropic, baseUrl: "${sim.baseUrl}", apiKey: "sk-sim-test-key" }
  gemini: { protocol: gemini, baseUrl: "${sim.baseUrl}", apiKey: "sk-sim-test-key" }
models:
  - { id: c-openai, plugin: text, upstreams: [openai], upstreamModel: sim-openai, pricing: ${pricing} }
  - { id: c-responses, plugin: text, upstreams: [responses], upstreamModel: sim-responses, pricing: ${pricing} }
  - { id: c-anthropic, plugin: text, upstreams: [anthropic], upstreamModel: sim-anthropic, pricing: ${pricing} }
  - { id: c-gemini, plugin: text, upstreams: [gemini], upstreamModel: sim-gemini, pricing: ${pricing} }
`
  )
  gateway = await startTestGateway({ configPath })
  admin = makeAdmin(gateway)
}, 60_000)

afterAll(async () => {
  await closeAfterReplay({ admin, close: () => gateway.close() })
  await sim.close()
  rmSync(dir, { recursive: true, force: true })
})

/** What each vendor reports of the knobs: OpenAI chat no writes, Gemini reads only, the Responses API no 1-hour split. */
const REPORTED: Record<string, { read: number; write: number; oneHour: number }> = {
  "c-openai": { read: 5, write: 0, oneHour: 0 },
  "c-responses": { read: 5, write: 3, oneHour: 0 },
  "c-anthropic": { read: 5, write: 3, oneHour: 1 },
  "c-gemini": { read: 5, write: 0, oneHour: 0 }
}

const ceil = (tokens: number, perMillion: bigint) => (BigInt(tokens) * perMillion + 999_999n) / 1_000_000n

const PROMPT = "Please summarise the long shared document that every request of this conversation starts with."

const post = async (customer: Customer, path: string, body: unknown, headers: Record<string, string> = {}) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body)
  })
  assert.strictEqual(response.status, 200)
  return response.text()
}

const lastData = (text: string): Wire => {
  const data = text
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)) as Wire)
  return data
}

describe.each(Object.keys(REPORTED))("%s with cache prices", (model) => {
  const reported = REPORTED[model]

  /** The one usage event of the customer's one request: the split as the vendor reported it, priced part by part. */
  const assertBilledSplit = async (customer: Customer) => {
    const entries = await settledLedger(admin, customer.accountId)
    const settled = entries.filter((e) => e.type === "UsageRecalculated")
    assert.strictEqual(settled.length, 1)
    const usage = (settled[0].data as { usage: Record<string, number> }).usage
    assert.strictEqual(usage.cacheReadTokens, reported.read)
    assert.strictEqual(usage.cacheWriteTokens, reported.write)
    assert.strictEqual(usage.cacheWrite1hTokens ?? 0, reported.oneHour)
    const expected =
      ceil(usage.inputTokens, PRICES.input) +
      ceil(usage.cacheReadTokens, PRICES.cacheRead) +
      ceil(usage.cacheWriteTokens - (usage.cacheWrite1hTokens ?? 0), PRICES.cacheWrite) +
      ceil(usage.cacheWrite1hTokens ?? 0, PRICES.cacheWrite1h) +
      ceil(usage.outputTokens, PRICES.output)
    assert.strictEqual(settled[0].amount, formatMicros(expected))
    return usage
  }

  it("chat completions, JSON and streamed: cached_tokens shown, cached tokens billed at the cache price", async () => {
    for (const stream of [false, true]) {
      const customer = await admin.customer()
      const text = await post(customer, "/v1/chat/completions", {
        model,
        messages: [{ role: "user", content: PROMPT }],
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {})
      })
      const body = stream ? lastData(text).findLast((d: Wire) => d.usage)?.usage : JSON.parse(text).usage
      assert.strictEqual(body.prompt_tokens_details.cached_tokens, reported.read, `stream: ${stream}`)
      const usage = await assertBilledSplit(customer)
      assert.strictEqual(
        body.prompt_tokens,
        usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens,
        "OpenAI's prompt_tokens include the cached ones"
      )
    }
  })

  it("messages, JSON and streamed: Anthropic's cache fields and their 1-hour split", async () => {
    for (const stream of [false, true]) {
      const customer = await admin.customer()
      const text = await post(
        customer,
        "/v1/messages",
        { model, max_tokens: 256, messages: [{ role: "user", content: PROMPT }], stream },
        { "anthropic-version": "2023-06-01" }
      )
      const usage = stream
        ? lastData(text).find((d: Wire) => d.type === "message_start").message.usage
        : JSON.parse(text).usage
      const billed = await assertBilledSplit(customer)
      if (!stream || model === "c-anthropic") {
        // A stream from another vendor learns its cache usage only at its end (message_delta), as its input count.
        assert.strictEqual(usage.cache_read_input_tokens, reported.read)
        assert.strictEqual(usage.cache_creation_input_tokens, reported.write)
        assert.strictEqual(usage.input_tokens, billed.inputTokens, "input_tokens exclude cached tokens")
        assert.deepStrictEqual(usage.cache_creation, {
          ephemeral_5m_input_tokens: reported.write - reported.oneHour,
          ephemeral_1h_input_tokens: reported.oneHour
        })
      }
      if (stream) {
        const delta = lastData(text).findLast((d: Wire) => d.type === "message_delta").usage
        assert.strictEqual(delta.cache_read_input_tokens, reported.read)
        assert.strictEqual(delta.cache_creation_input_tokens, reported.write)
      }
    }
  })

  it("generateContent and responses: cachedContentTokenCount and input_tokens_details", async () => {
    const gemini = await admin.customer()
    const generated = JSON.parse(
      await post(gemini, `/v1beta/models/${model}:generateContent`, {
        contents: [{ role: "user", parts: [{ text: PROMPT }] }]
      })
    )
    assert.strictEqual(generated.usageMetadata.cachedContentTokenCount, reported.read)
    await assertBilledSplit(gemini)
    const responses = await admin.customer()
    const created = JSON.parse(await post(responses, "/v1/responses", { model, input: PROMPT }))
    assert.strictEqual(created.usage.input_tokens_details.cached_tokens, reported.read)
    await assertBilledSplit(responses)
  })
})

describe("usage reports", () => {
  it("show the cache split next to the input it is not counted in", async () => {
    const customer = await admin.customer()
    await post(
      customer,
      "/v1/messages",
      { model: "c-anthropic", max_tokens: 64, messages: [{ role: "user", content: PROMPT }] },
      { "anthropic-version": "2023-06-01" }
    )
    const entries = await settledLedger(admin, customer.accountId)
    const settled = entries.filter((e) => e.type === "UsageRecalculated")
    assert.strictEqual(settled.length, 1)
    const usage = (settled[0].data as { usage: Record<string, number> }).usage
    const report = (await (
      await fetch(`${gateway.url}/v1/usage?groupBy=model`, { headers: { authorization: `Bearer ${customer.key}` } })
    ).json()) as { data: ReadonlyArray<Record<string, unknown>> }
    assert.deepInclude(report.data[0], {
      model: "c-anthropic",
      requests: 1,
      inputTokens: usage.inputTokens,
      cacheReadTokens: 5,
      cacheWriteTokens: 3
    })
  })
})
