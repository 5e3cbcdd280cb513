/**
 * The end-to-end proof that a third party adds a plugin without touching `src/`: an operator config lists the example
 * module under `plugins:`, the real gateway (PGlite, loopback port) loads it at start, and the official SDKs call its
 * model — plain, streamed, and converted to Anthropic's dialect — billed by the plugin's own pricing rule.
 */
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import OpenAI from "openai"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const ECHO_MODULE = resolve(import.meta.dirname, "../../examples/plugin-echo/index.ts")

// perCall 0.001 USD = 1000 micros; output 2.00 USD per 1M tokens = 2 micros per token; holds cover 1000 tokens.
const PER_CALL = 1_000n
const OUTPUT_PER_TOKEN = 2n
const MAX_OUTPUT_TOKENS = 1_000

const CONFIG = `
# The echo plugin calls no upstream, but every model must name one.
upstreams:
  unused: { protocol: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: "not-used" }
models:
  - id: echo-1
    plugin: echo
    upstreams: [unused]
    pricing: { perCall: "0.001", output: "2.00" }
    maxOutputTokens: ${MAX_OUTPUT_TOKENS}
plugins: ["${ECHO_MODULE}"]
`

const micros = (amount: bigint): string => {
  const whole = amount / 1_000_000n
  return `${whole}.${(amount % 1_000_000n).toString().padStart(6, "0")}`
}

/** What the echo plugin holds and charges for a call with `outputTokens` of output under `cap`. */
const expectedBilling = (outputTokens: number, cap = MAX_OUTPUT_TOKENS) => {
  const hold = PER_CALL + BigInt(cap) * OUTPUT_PER_TOKEN
  const cost = PER_CALL + BigInt(outputTokens) * OUTPUT_PER_TOKEN
  return { hold: micros(hold), cost: micros(cost), refund: micros(hold - cost) }
}

interface LedgerEntry {
  readonly type: string
  readonly amount: string | null
  readonly holdId: string | null
  readonly requestId: string | null
  readonly keyId: string | null
  readonly model: string | null
  readonly data: Record<string, unknown>
}

let dir: string
let gateway: TestGateway
let accountId: string
let keyId: string
let apiKey: string

const admin = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${gateway.adminToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  assert.isTrue(response.ok, `${method} ${path}: HTTP ${response.status}`)
  return response.json() as Promise<Record<string, unknown>>
}

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms))

/** The ledger entries of one request, once its hold is resolved (a stream settles just after its last byte). */
const billingOf = async (requestId: string): Promise<ReadonlyArray<LedgerEntry>> => {
  for (let attempt = 0; ; attempt++) {
    const page = (await admin("GET", `/admin/accounts/${accountId}/ledger?limit=1000`)) as {
      data: ReadonlyArray<LedgerEntry>
    }
    const hold = page.data.find((entry) => entry.type === "HoldPlaced" && entry.requestId === requestId)
    const entries = hold === undefined ? [] : page.data.filter((entry) => entry.holdId === hold.holdId)
    // Settlement and refund are appended together, so either one means the hold is resolved.
    const resolved = entries.some((entry) => entry.type === "UsageRecalculated" || entry.type === "RefundIssued")
    if (resolved || attempt >= 40) return entries
    await sleep(50)
  }
}

const assertBilled = async (requestId: string | null, outputTokens: number, cap = MAX_OUTPUT_TOKENS) => {
  assert.isString(requestId, "the gateway answers with x-request-id")
  const entries = await billingOf(requestId as string)
  const want = expectedBilling(outputTokens, cap)
  const fullyUsed = want.refund === micros(0n)
  assert.deepStrictEqual(
    entries.map((entry) => entry.type),
    // A reply that used its whole cap costs exactly the hold: nothing to give back.
    fullyUsed ? ["HoldPlaced", "UsageRecalculated"] : ["HoldPlaced", "UsageRecalculated", "RefundIssued"]
  )
  const [hold, usage, refund] = entries
  assert.strictEqual(hold.amount, want.hold)
  assert.strictEqual(hold.model, "echo-1")
  assert.strictEqual(hold.keyId, keyId)
  assert.strictEqual(hold.data.plugin, "echo")
  assert.strictEqual(usage.data.cost, want.cost, "the echo plugin's price of the reported usage")
  assert.strictEqual(usage.data.captured, want.cost)
  assert.strictEqual((usage.data.usage as { outputTokens: number }).outputTokens, outputTokens)
  if (fullyUsed) return
  assert.strictEqual(refund.amount, want.refund)
  assert.strictEqual(refund.data.reason, "unused")
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tollgate-echo-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, CONFIG)
  gateway = await startTestGateway({ configPath })
  accountId = (await admin("POST", "/admin/accounts", { name: "echo-customer" })).id as string
  await admin("POST", `/admin/accounts/${accountId}/deposits`, { amount: "10", reference: "echo-topup" })
  const key = await admin("POST", `/admin/accounts/${accountId}/keys`, { name: "echo", models: ["echo-1"] })
  keyId = key.id as string
  apiKey = key.key as string
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const openai = () => new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
const anthropic = () => new Anthropic({ apiKey, baseURL: gateway.url, maxRetries: 0 })

describe("a third-party plugin loaded from the operator config (examples/plugin-echo)", () => {
  it("is listed in /v1/models", async () => {
    const ids: Array<string> = []
    for await (const model of openai().models.list()) ids.push(model.id)
    assert.deepStrictEqual(ids, ["echo-1"])
  })

  it("answers the openai SDK and bills the hold, the echo price and the refund", async () => {
    const { data, response } = await openai()
      .chat.completions.create({
        model: "echo-1",
        messages: [
          { role: "system", content: "ignored by echo" },
          { role: "user", content: "first message" },
          { role: "assistant", content: "first message" },
          { role: "user", content: "hello   there\nworld" }
        ]
      })
      .withResponse()
    assert.strictEqual(data.model, "echo-1")
    assert.strictEqual(data.choices[0].message.content, "hello there world")
    assert.strictEqual(data.choices[0].finish_reason, "stop")
    assert.strictEqual(data.usage?.completion_tokens, 3)
    assert.strictEqual(data.usage?.prompt_tokens, 10)
    await assertBilled(response.headers.get("x-request-id"), 3)
  })

  it("stops at max_tokens like a real model and holds only for that cap", async () => {
    const { data, response } = await openai()
      .chat.completions.create({
        model: "echo-1",
        max_tokens: 2,
        messages: [{ role: "user", content: "one two three four five" }]
      })
      .withResponse()
    assert.strictEqual(data.choices[0].message.content, "one two")
    assert.strictEqual(data.choices[0].finish_reason, "length")
    await assertBilled(response.headers.get("x-request-id"), 2, 2)
  })

  it("streams to the openai SDK, with the usage chunk when asked", async () => {
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: "echo-1",
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: "user", content: "stream me back please" }]
      })
      .withResponse()
    let text = ""
    let usage: OpenAI.CompletionUsage | null | undefined
    const finishes: Array<string> = []
    for await (const chunk of stream) {
      assert.strictEqual(chunk.model, "echo-1")
      text += chunk.choices[0]?.delta.content ?? ""
      if (chunk.choices[0]?.finish_reason) finishes.push(chunk.choices[0].finish_reason)
      if (chunk.usage) usage = chunk.usage
    }
    assert.strictEqual(text, "stream me back please")
    assert.deepStrictEqual(finishes, ["stop"])
    assert.strictEqual(usage?.completion_tokens, 4)
    await assertBilled(response.headers.get("x-request-id"), 4)
  })

  it("streams to the openai SDK without usage when not asked, and still bills from the plugin's usage", async () => {
    const { data: stream, response } = await openai()
      .chat.completions.create({
        model: "echo-1",
        stream: true,
        messages: [{ role: "user", content: "no usage here" }]
      })
      .withResponse()
    let text = ""
    for await (const chunk of stream) {
      assert.isTrue(chunk.choices.length > 0, "the usage chunk is not forwarded to a client that did not ask")
      text += chunk.choices[0].delta.content ?? ""
    }
    assert.strictEqual(text, "no usage here")
    await assertBilled(response.headers.get("x-request-id"), 3)
  })

  it("answers the Anthropic SDK through the gateway's conversion", async () => {
    const { data, response } = await anthropic()
      .messages.create({
        model: "echo-1",
        max_tokens: 100,
        system: "ignored by echo",
        messages: [{ role: "user", content: "bonjour from claude land" }]
      })
      .withResponse()
    assert.strictEqual(data.type, "message")
    assert.strictEqual(data.model, "echo-1")
    assert.deepStrictEqual(
      data.content.map((block) => (block.type === "text" ? block.text : block.type)),
      ["bonjour from claude land"]
    )
    assert.strictEqual(data.stop_reason, "end_turn")
    assert.strictEqual(data.usage.output_tokens, 4)
    await assertBilled(response.headers.get("x-request-id"), 4, 100)
  })

  it("streams to the Anthropic SDK through the gateway's conversion", async () => {
    const stream = anthropic().messages.stream({
      model: "echo-1",
      max_tokens: 50,
      messages: [{ role: "user", content: "streamed to anthropic" }]
    })
    const types: Array<string> = []
    stream.on("streamEvent", (event) => types.push(event.type))
    const message = await stream.finalMessage()
    const { response } = await stream.withResponse()
    assert.deepStrictEqual(
      message.content.map((block) => (block.type === "text" ? block.text : block.type)),
      ["streamed to anthropic"]
    )
    assert.strictEqual(message.stop_reason, "end_turn")
    assert.strictEqual(message.usage.output_tokens, 3)
    assert.strictEqual(types[0], "message_start")
    assert.strictEqual(types.at(-1), "message_stop")
    assert.strictEqual(types.filter((type) => type === "message_start").length, 1)
    await assertBilled(response.headers.get("x-request-id"), 3, 50)
  })

  it("leaves the account's balance equal to deposits minus what the echo plugin charged", async () => {
    const account = (await admin("GET", `/admin/accounts/${accountId}`)) as {
      balance: { deposited: string; captured: string; held: string; available: string }
    }
    const page = (await admin("GET", `/admin/accounts/${accountId}/ledger?limit=1000`)) as {
      data: ReadonlyArray<LedgerEntry>
    }
    const captured = page.data
      .filter((entry) => entry.type === "UsageRecalculated")
      .reduce((sum, entry) => sum + BigInt(String(entry.data.captured).replace(".", "")), 0n)
    assert.strictEqual(account.balance.held, "0.000000")
    assert.strictEqual(account.balance.captured, micros(captured))
    assert.strictEqual(account.balance.available, micros(10_000_000n - captured))
  })
})
