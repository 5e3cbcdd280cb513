/**
 * Upstream faults, as the OpenAI and Anthropic SDKs see them and as the ledger records them: connect refused, no first
 * byte before the timeout, 5xx, 429 with `retry-after`, malformed JSON, a stream cut mid-way, a stream that goes
 * silent (idle timeout). Before the first byte: a clear error in the client's dialect and the hold released in full.
 * After it: the client keeps what arrived and pays for exactly that. The suite ends with replay and audit clean.
 */
import { freePort } from "../support/Ports.ts"
import Anthropic from "@anthropic-ai/sdk"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import type { FaultKnobs } from "../../src/adapters/simulator/Faults.ts"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../../src/adapters/tokenizer/Tokenizer.ts"
import { countAnthropicMessages, countOpenAIChat } from "../../src/adapters/tokenizer/ChatTally.ts"
import { assertBilled, type Expected } from "../http/chat/Billing.ts"
import { type Admin, makeAdmin } from "../http/chat/ChatHarness.ts"
import type { Wire } from "../http/chat/Fixtures.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let sim: RunningSimulator
let gateway: TestGateway
let admin: Admin
let dir: string
let injected = 0

// Short timeouts so the timeout cases finish in about a second.
const config = (sim: string, deadPort: number) => `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 1500, idleTimeoutMs: 1000 }
  sim-anthropic: { protocol: anthropic, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 1500, idleTimeoutMs: 1000 }
  dead: { protocol: openai, baseUrl: "http://127.0.0.1:${deadPort}/v1", apiKey: "sk-none", timeoutMs: 1500 }
models:
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-anthropic, plugin: text, upstreams: [sim-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
  - { id: dead, plugin: text, upstreams: [dead], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
`

beforeAll(async () => {
  sim = await startSimulator()
  dir = mkdtempSync(join(tmpdir(), "tollgate-faults-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, config(sim.baseUrl, await freePort()))
  gateway = await startTestGateway({ configPath })
  admin = makeAdmin(gateway)
}, 60_000)

afterAll(async () => {
  const replay = await admin?.call("POST", "/admin/replay")
  const audit = await admin?.call("POST", "/admin/audit/verify")
  await gateway?.close()
  await sim?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  assert.strictEqual(replay?.status, 200)
  assert.isTrue(replay?.body.ok, JSON.stringify(replay?.body))
  assert.strictEqual(audit?.status, 200, JSON.stringify(audit?.body))
  assert.isTrue(audit?.body.ok, JSON.stringify(audit?.body))
  console.info(`upstream faults injected: ${injected}`)
})

const openai = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
const anthropic = (key: string) => new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 })
const hello = [{ role: "user" as const, content: "Hello from the fault suite" }]

const caught = async <E>(promise: Promise<unknown>): Promise<E> => {
  try {
    await promise
  } catch (error) {
    return error as E
  }
  throw new Error("expected the call to fail")
}

const inject = (knobs: FaultKnobs) => {
  injected += 1
  sim.setFaults(knobs, 1)
}

interface BeforeFirstByte {
  readonly name: string
  readonly model: "sim-openai" | "sim-anthropic" | "dead"
  readonly knobs?: FaultKnobs
  readonly status: number
  readonly openaiType: string
  readonly anthropicType: string
  readonly retryAfter?: string
  /** A streamed request too (a malformed SSE event arrives after the status line, so that one is in band). */
  readonly streamed?: boolean
}

const beforeFirstByte: ReadonlyArray<BeforeFirstByte> = [
  { name: "connect refused", model: "dead", status: 502, openaiType: "server_error", anthropicType: "api_error" },
  {
    name: "no first byte before the timeout",
    model: "sim-anthropic",
    knobs: { latencyMs: 4000 },
    status: 504,
    openaiType: "server_error",
    anthropicType: "timeout_error"
  },
  {
    name: "5xx",
    model: "sim-openai",
    knobs: { status: 500 },
    status: 502,
    openaiType: "server_error",
    anthropicType: "api_error"
  },
  {
    name: "429 with retry-after",
    model: "sim-anthropic",
    knobs: { status: 429, retryAfterSeconds: 3 },
    status: 429,
    openaiType: "rate_limit_error",
    anthropicType: "rate_limit_error",
    retryAfter: "3"
  },
  {
    name: "malformed JSON",
    model: "sim-openai",
    knobs: { malformed: true },
    streamed: false,
    status: 502,
    openaiType: "server_error",
    anthropicType: "api_error"
  }
]

/** Google's status names for the HTTP statuses these faults produce. */
const googleStatusOf: Readonly<Record<number, string>> = {
  429: "RESOURCE_EXHAUSTED",
  502: "INTERNAL",
  504: "DEADLINE_EXCEEDED"
}

describe("faults before the first byte", () => {
  it.each(beforeFirstByte)("$name: a clear error in each dialect, the hold released in full", async (c) => {
    const customer = await admin.customer()
    const expected: Array<Expected> = []
    for (const stream of c.streamed === false ? [false] : [false, true]) {
      if (c.knobs !== undefined) inject(c.knobs)
      else injected += 1
      const viaOpenAI = await caught<InstanceType<typeof OpenAI.APIError>>(
        openai(customer.key).chat.completions.create({ model: c.model, messages: hello, stream })
      )
      assert.instanceOf(viaOpenAI, OpenAI.APIError, String(viaOpenAI))
      assert.strictEqual(viaOpenAI.status, c.status, `openai ${c.name}: ${viaOpenAI.message}`)
      assert.strictEqual(viaOpenAI.type, c.openaiType)
      assert.isNotEmpty(viaOpenAI.message)
      if (c.retryAfter !== undefined) assert.strictEqual(viaOpenAI.headers?.get("retry-after"), c.retryAfter)
      expected.push({ requestId: undefined, model: c.model, outcome: { _tag: "Released", reason: "failed" } })

      if (c.knobs !== undefined) inject(c.knobs)
      else injected += 1
      const viaAnthropic = await caught<InstanceType<typeof Anthropic.APIError>>(
        anthropic(customer.key).messages.create({ model: c.model, max_tokens: 128, messages: hello, stream })
      )
      assert.instanceOf(viaAnthropic, Anthropic.APIError, String(viaAnthropic))
      assert.strictEqual(viaAnthropic.status, c.status, `anthropic ${c.name}: ${viaAnthropic.message}`)
      assert.strictEqual((viaAnthropic.error as Wire)?.type, "error")
      assert.strictEqual((viaAnthropic.error as Wire)?.error?.type, c.anthropicType)
      if (c.retryAfter !== undefined) assert.strictEqual(viaAnthropic.headers?.get("retry-after"), c.retryAfter)
      expected.push({ requestId: undefined, model: c.model, outcome: { _tag: "Released", reason: "failed" } })

      // The same through Google's native path, answered in Google's envelope.
      if (c.knobs !== undefined) inject(c.knobs)
      else injected += 1
      const method = stream ? "streamGenerateContent?alt=sse" : "generateContent"
      const viaGoogle = await fetch(`${gateway.url}/v1beta/models/${c.model}:${method}`, {
        method: "POST",
        headers: { "x-goog-api-key": customer.key, "content-type": "application/json" },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "Hello" }] }] })
      })
      const googleBody = (await viaGoogle.json()) as Wire
      assert.strictEqual(viaGoogle.status, c.status, `google ${c.name}: ${JSON.stringify(googleBody)}`)
      assert.strictEqual(googleBody.error.code, c.status)
      assert.strictEqual(googleBody.error.status, googleStatusOf[c.status])
      assert.isNotEmpty(googleBody.error.message)
      if (c.retryAfter !== undefined) assert.strictEqual(viaGoogle.headers.get("retry-after"), c.retryAfter)
      expected.push({ requestId: undefined, model: c.model, outcome: { _tag: "Released", reason: "failed" } })
    }
    await assertBilled(admin, customer, expected)
    assert.strictEqual((await admin.balance(customer.accountId)).captured, "0.000000")
  })
})

const drainOpenAI = async (key: string, model: string) => {
  const stream = await openai(key).chat.completions.create({ model, messages: hello, stream: true })
  let text = ""
  const failure = await caught<Error>(
    (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
    })()
  )
  return { text, failure }
}

const drainAnthropic = async (key: string, model: string) => {
  const events = await anthropic(key).messages.create({ model, max_tokens: 512, messages: hello, stream: true })
  let text = ""
  const failure = await caught<Error>(
    (async () => {
      for await (const event of events) {
        if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text
      }
    })()
  )
  return { text, failure }
}

describe("faults after the first byte", () => {
  const cases = [
    { name: "a stream cut mid-way", knobs: { cutAfter: 5, replyTokens: 80 } },
    { name: "a stream that goes silent (idle timeout)", knobs: { stallAfter: 5, replyTokens: 80 } }
  ] as const

  it.each(cases)("$name: the client sees an error after what arrived, and pays for exactly that", async (c) => {
    const customer = await admin.customer()
    const expected: Array<Expected> = []
    for (const model of ["sim-openai", "sim-anthropic"]) {
      inject(c.knobs)
      const viaOpenAI = await drainOpenAI(customer.key, model)
      assert.instanceOf(viaOpenAI.failure, Error)
      assert.isNotEmpty(viaOpenAI.text, `${model}: something arrived before the fault`)
      expected.push({
        requestId: undefined,
        model,
        outcome: {
          _tag: "Delivered",
          tokens: { input: countOpenAIChat({ messages: hello }), output: countText(viaOpenAI.text) }
        }
      })
      inject(c.knobs)
      const viaAnthropic = await drainAnthropic(customer.key, model)
      assert.instanceOf(viaAnthropic.failure, Anthropic.APIError, String(viaAnthropic.failure))
      assert.isNotEmpty(viaAnthropic.text)
      expected.push({
        requestId: undefined,
        model,
        outcome: {
          _tag: "Delivered",
          tokens: { input: countAnthropicMessages({ messages: hello }), output: countText(viaAnthropic.text) }
        }
      })
    }
    await assertBilled(admin, customer, expected)
  })
})
