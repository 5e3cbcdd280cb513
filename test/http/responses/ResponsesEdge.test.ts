/**
 * `/v1/responses` at its edge: every field typed (a 400 naming it, a bad value quoted at most ~100 characters,
 * nothing held), ids bounded so storage never refuses what was accepted, a background response counted against its
 * key's concurrency while it runs, and `truncation: "auto"` dropping the oldest items to fit the model's window.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { settledLedger } from "../chat/Billing.ts"
import { type Admin, closeAfterReplay, makeAdmin } from "../chat/ChatHarness.ts"

type Json = Record<string, unknown>
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let gateway: TestGateway
let admin: Admin
let thinking: RunningSimulator
let quick: RunningSimulator
let dir: string

beforeAll(async () => {
  thinking = await startSimulator({ faults: { latencyMs: 1_500 } })
  quick = await startSimulator({})
  dir = mkdtempSync(join(tmpdir(), "tollgate-responses-edge-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  thinking: { protocol: anthropic, baseUrl: "${thinking.baseUrl}", apiKey: "sk-sim-test-key" }
  quick: { protocol: openai, baseUrl: "${quick.baseUrl}/v1", apiKey: "sk-sim-test-key" }
models:
  - { id: thinking, plugin: text, upstreams: [thinking], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
  - { id: quick, plugin: text, upstreams: [quick], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: tiny, plugin: text, upstreams: [quick], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" }, maxOutputTokens: 64, contextWindow: 600 }
`
  )
  gateway = await startTestGateway({ configPath, responses: { pollMillis: 100, renewMillis: 200 } })
  admin = makeAdmin(gateway)
}, 60_000)

afterAll(async () => {
  await closeAfterReplay({ admin, close: () => gateway.close() })
  await thinking?.close()
  await quick?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const post = async (key: string, body: unknown) => {
  const response = await fetch(`${gateway.url}/v1/responses`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, text, json: () => JSON.parse(text) as Json }
}

describe("every field typed at the edge", () => {
  const long = "z".repeat(300_000)
  const user = (extra: Json = {}) => ({ role: "user", content: "hi", ...extra })
  const cases: ReadonlyArray<readonly [string, Json]> = [
    ["temperature", { temperature: "zzz" }],
    ["temperature", { temperature: 2.5 }],
    ["top_p", { top_p: 1e308 }],
    ["text", { text: "str" }],
    ["text.format.type", { text: { format: { type: "yaml" } } }],
    ["tools", { tools: "str" }],
    ["tools.0.type", { tools: [{ name: "f" }] }],
    ["tools.0.name", { tools: [{ type: "function", name: 7 }] }],
    ["reasoning", { reasoning: "str" }],
    ["reasoning.effort", { reasoning: { effort: "extreme" } }],
    ["truncation", { truncation: "sometimes" }],
    ["service_tier", { service_tier: "gold" }],
    ["top_logprobs", { top_logprobs: 21 }],
    ["max_output_tokens", { max_output_tokens: 8 }],
    ["input.0.status", { input: [user({ status: "done" })] }],
    [
      "input.0.content.0.detail",
      { input: [user({ content: [{ type: "input_image", image_url: "https://x.invalid/a.png", detail: "ultra" }] })] }
    ],
    ["input.0.id", { input: [user({ id: "i".repeat(3_000) })] }],
    ["input.0.id", { input: [{ type: "item_reference", id: "r".repeat(300_000) }] }],
    ["previous_response_id", { previous_response_id: "p".repeat(3_000) }],
    ["conversation", { conversation: 12 }],
    ["include.0", { include: ["everything"] }],
    ["metadata.k", { metadata: { k: 5 } }],
    ["safety_identifier", { safety_identifier: "s".repeat(65) }],
    ["tool_choice", { tool_choice: "sometimes" }],
    ["temperature", { temperature: long }]
  ]
  for (const [param, fields] of cases) {
    it(`${param}: ${JSON.stringify(fields).slice(0, 60)} → 400 naming it, nothing held`, async () => {
      const customer = await admin.customer()
      const response = await post(customer.key, { model: "quick", input: "hi", ...fields })
      assert.strictEqual(response.status, 400, response.text.slice(0, 300))
      const error = response.json().error as { param: string; message: string; type: string }
      assert.strictEqual(error.param, param)
      assert.strictEqual(error.type, "invalid_request_error")
      assert.isBelow(error.message.length, 400, "a bad value is quoted at most ~100 characters")
      const entries = await admin.ledger(customer.accountId)
      assert.isUndefined(
        entries.find((e) => e.type === "HoldPlaced"),
        "nothing held"
      )
    })
  }

  it("every hosted tool type is accepted by shape (whether a model serves it is the converter's call)", async () => {
    const customer = await admin.customer()
    for (const tool of [
      { type: "web_search" },
      { type: "code_interpreter", container: { type: "auto" } },
      { type: "mcp", server_label: "x" }
    ]) {
      const response = await post(customer.key, { model: "quick", input: "hi", tools: [tool] })
      // Refused, if at all, by the converter for this model's upstream (its own code), never by the edge's shape check.
      if (response.status !== 200) assert.strictEqual((response.json().error as Json).code, "unsupported_parameter")
    }
  })
})

describe("a background response counts against its key's concurrency while it runs", () => {
  it("with concurrency 1: other calls are refused while it runs, and admitted once it is done", async () => {
    const customer = await admin.customer()
    const key = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, {
      name: "one-at-a-time",
      rateLimits: { concurrency: 1 }
    })
    assert.strictEqual(key.status, 201, JSON.stringify(key.body))
    const secret = key.body.key as string
    const created = await post(secret, { model: "thinking", input: "Take your time", background: true })
    assert.strictEqual(created.status, 200, created.text)
    const id = created.json().id as string
    await sleep(400) // claimed and running upstream
    const foreground = await post(secret, { model: "quick", input: "Me too" })
    assert.strictEqual(foreground.status, 429, foreground.text)
    const another = await post(secret, { model: "thinking", input: "And me", background: true })
    assert.strictEqual(another.status, 429, another.text)
    // Polled with the account's other key: a poll is a request in flight too, which this key has no room for.
    let status = "queued"
    while (status === "queued" || status === "in_progress") {
      await sleep(200)
      const found = await fetch(`${gateway.url}/v1/responses/${id}`, {
        headers: { authorization: `Bearer ${customer.key}` }
      })
      status = ((await found.json()) as Json).status as string
    }
    assert.strictEqual(status, "completed")
    await sleep(300)
    assert.strictEqual((await post(secret, { model: "quick", input: "Now me" })).status, 200)
  }, 30_000)
})

describe('truncation: "auto"', () => {
  it("drops the oldest items to fit the model's context window, and the response says truncation auto", async () => {
    const customer = await admin.customer()
    const paragraph = "The quick brown fox jumps over the lazy dog. ".repeat(12)
    let previous: string | undefined
    for (let turn = 0; turn < 4; turn++) {
      const response = await post(customer.key, {
        model: "quick",
        input: `${turn}: ${paragraph}`,
        ...(previous === undefined ? {} : { previous_response_id: previous })
      })
      assert.strictEqual(response.status, 200, response.text)
      previous = response.json().id as string
    }
    const whole = await post(customer.key, { model: "quick", input: "And now?", previous_response_id: previous })
    const wholeTokens = (whole.json().usage as { input_tokens: number }).input_tokens
    assert.isAbove(wholeTokens, 600, "the chain is longer than tiny's window")
    const truncated = await post(customer.key, {
      model: "tiny",
      input: "And now?",
      previous_response_id: previous,
      truncation: "auto"
    })
    assert.strictEqual(truncated.status, 200, truncated.text)
    const body = truncated.json()
    assert.strictEqual(body.truncation, "auto")
    const tokens = (body.usage as { input_tokens: number }).input_tokens
    assert.isAtMost(tokens, 600 - 64, "fits the window less the output cap")
    assert.isAbove(tokens, 0)
    const entries = await settledLedger(admin, customer.accountId)
    assert.strictEqual(entries.filter((e) => e.type === "UsageRecalculated").length, 6)
  })
})
