/**
 * Each check of the spec's declarative chat suite catches the bug it is for, as ContractChecks.test.ts shows for a new
 * kind's suite: a correct chat plugin (an NDJSON vendor read through `call.http`, answered whole or as OpenAI-dialect
 * events) passes every check, and a plugin with one planted bug — a wrong price, usage over the hold, an answer despite
 * the abort, a hang, a defect, a wrong failure reason, a reply of the wrong shape or text — fails the check meant for it.
 */
import { assert, describe, it } from "@effect/vitest"
import type {
  ChatCall,
  ChatPlugin,
  ChatReply,
  PluginFailure,
  PluginModel,
  SseFrame,
  UpstreamHttp,
  Usage
} from "@tollgate/plugin-spec/chat"
import { type ChatFixtures, chatContractChecks } from "@tollgate/plugin-spec/contract"
import { Effect } from "effect"

const cancelled: PluginFailure = { _tag: "PluginFailure", reason: "cancelled", message: "the request was cancelled" }
const encoder = new TextEncoder()
const words = (text: string) => text.split(/\s+/).filter((word) => word !== "")

/**
 * The vendor: `POST /chat` answers NDJSON, one `{"text"}` line per word of the prompt (up to `max`), then
 * `{"usage":{"in","out"}}`; the lines arrive cut mid-line. Model `refuse` is refused as a 400 would be.
 */
const http: UpstreamHttp = {
  request: (request) => {
    if (request.signal.aborted) return Effect.fail(cancelled)
    const body = JSON.parse(String(request.body)) as { model: string; prompt: string; max: number }
    if (body.model === "refuse") {
      return Effect.fail({ _tag: "PluginFailure", reason: "invalid_request", message: "refused", upstreamStatus: 400 })
    }
    const said = words(body.prompt).slice(0, body.max)
    const ndjson = [
      ...said.map((word) => JSON.stringify({ text: word })),
      JSON.stringify({ usage: { in: words(body.prompt).length, out: said.length } })
    ].join("\n")
    const middle = Math.floor(ndjson.length / 2)
    return Effect.succeed({
      status: 200,
      headers: { "content-type": "application/x-ndjson" },
      json: Effect.die("NDJSON only"),
      text: Effect.succeed(ndjson),
      chunks: async function* () {
        yield encoder.encode(ndjson.slice(0, middle))
        yield encoder.encode(ndjson.slice(middle))
      },
      events: async function* () {}
    })
  }
}

interface Line {
  readonly text?: string
  readonly usage?: { readonly in: number; readonly out: number }
}

const linesOf = async function* (chunks: AsyncIterable<Uint8Array>): AsyncIterable<Line> {
  const decoder = new TextDecoder()
  let buffer = ""
  for await (const chunk of chunks) {
    buffer += decoder.decode(chunk, { stream: true })
    const lines = buffer.split("\n")
    buffer = lines.pop() ?? ""
    for (const line of lines) if (line.trim() !== "") yield JSON.parse(line) as Line
  }
  if (buffer.trim() !== "") yield JSON.parse(buffer) as Line
}

const openAIUsage = (usage: { readonly in: number; readonly out: number }) => ({
  prompt_tokens: usage.in,
  completion_tokens: usage.out,
  total_tokens: usage.in + usage.out
})

/** The vendor's lines as OpenAI chat-completion chunks, a usage chunk, then `[DONE]`. */
const framesOf = async function* (lines: AsyncIterable<Line>, model: string): AsyncIterable<SseFrame> {
  let first = true
  for await (const line of lines) {
    const base = { id: "chatcmpl-x", object: "chat.completion.chunk", created: 0, model }
    if (line.text !== undefined) {
      const content = first ? line.text : ` ${line.text}`
      first = false
      yield { data: JSON.stringify({ ...base, choices: [{ index: 0, delta: { content }, finish_reason: null }] }) }
    }
    if (line.usage !== undefined) {
      yield { data: JSON.stringify({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) }
      yield { data: JSON.stringify({ ...base, choices: [], usage: openAIUsage(line.usage) }) }
    }
  }
  yield { data: "[DONE]" }
}

const perMillion = (tokens: number, price: bigint | undefined) =>
  (BigInt(Math.max(0, Math.ceil(tokens))) * (price ?? 0n) + 999_999n) / 1_000_000n
const capOf = (call: Pick<ChatCall, "request" | "model">) =>
  Math.min(call.request.maxTokens ?? call.model.maxOutputTokens, call.model.maxOutputTokens)

const invoke = (call: ChatCall): Effect.Effect<ChatReply, PluginFailure> =>
  Effect.gen(function* () {
    const upstream = call.model.upstreams[0]
    if (upstream === undefined || call.http === undefined)
      return yield* Effect.fail({ ...cancelled, reason: "misconfigured" as const })
    const prompt = call.request.messages
      .flatMap((message): ReadonlyArray<{ readonly type: string; readonly text?: string }> => message.content)
      .map((part) => part.text ?? "")
      .join(" ")
    const response = yield* call.http.request({
      upstream,
      method: "POST",
      path: "/chat",
      body: JSON.stringify({ model: call.model.upstreamModel, prompt, max: capOf(call) }),
      signal: call.signal
    })
    const lines = linesOf(response.chunks())
    if (call.request.stream)
      return { _tag: "Events", dialect: "openai", events: framesOf(lines, call.model.id) } as const
    const read = yield* Effect.promise(async () => {
      const said: Array<string> = []
      let usage = { in: 0, out: 0 }
      for await (const line of lines) {
        if (line.text !== undefined) said.push(line.text)
        if (line.usage !== undefined) usage = line.usage
      }
      return { text: said.join(" "), usage }
    })
    return {
      _tag: "Body",
      dialect: "openai",
      body: {
        id: "chatcmpl-x",
        object: "chat.completion",
        created: 0,
        model: call.model.id,
        choices: [{ index: 0, message: { role: "assistant", content: read.text }, finish_reason: "stop" }],
        usage: openAIUsage(read.usage)
      }
    } as const
  })

const correct: ChatPlugin = {
  specificationVersion: "v1",
  id: "words",
  family: "words",
  kind: "chat",
  pricingKeys: { allowed: ["input", "output"], required: ["input", "output"] },
  pricing: {
    estimate: ({ request, inputTokens }, model) =>
      perMillion(inputTokens, model.pricing.input) + perMillion(capOf({ request, model }), model.pricing.output),
    // Cached prompt tokens are billed as input: every prompt token at the input price.
    price: (usage: Usage, model) =>
      perMillion(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens, model.pricing.input) +
      perMillion(usage.outputTokens, model.pricing.output)
  },
  invoke
}

const model = (id: string, upstreamModel = id): PluginModel => ({
  id,
  upstreams: [
    {
      name: "vendor",
      protocol: "words",
      baseUrl: "http://127.0.0.1:9",
      timeoutMs: 1_000,
      idleTimeoutMs: 1_000,
      maxConnections: 1
    }
  ],
  upstreamModel,
  pricing: { input: 1_000_000n, output: 2_000_000n },
  maxOutputTokens: 100
})

const fixtures: ChatFixtures = {
  models: [model("words-1")],
  calls: [
    { name: "a question", prompt: "one two three", expect: { text: "one two three", usage: { outputTokens: 3 } } },
    {
      name: "a question, streamed",
      prompt: "one two three four",
      maxTokens: 2,
      stream: true,
      expect: { text: "one two" }
    }
  ],
  failing: [
    { name: "a request the vendor refuses", prompt: "x", model: model("refused", "refuse"), reason: "invalid_request" }
  ],
  http,
  timeoutMs: 300,
  tokens: { encoding: "words", count: (text) => words(text).length }
}

const CHECKS = {
  shape: "has the shape the gateway accepts",
  pricing: "prices purely, in non-negative bigint micro-dollars, never more than the estimate for covered usage",
  answers: "answers a question with usage its estimate covers",
  abort: "stops a question, or fails it cleanly, when the signal is already aborted",
  answersStream: "answers a question, streamed with usage its estimate covers",
  abortStream: "stops a question, streamed, or fails it cleanly, when the signal is already aborted",
  failing: "fails a request the vendor refuses with reason invalid_request, never a defect",
  expect: "replies to a question as the fixture expects",
  expectStream: "replies to a question, streamed as the fixture expects"
} as const

/** Which checks reject for this plugin (and fixtures), by their key above. */
const failedChecks = async (plugin: ChatPlugin, overrides: Partial<ChatFixtures> = {}) => {
  const checks = chatContractChecks(plugin, { ...fixtures, ...overrides })
  assert.deepStrictEqual(
    checks.map((check) => check.name),
    Object.values(CHECKS)
  )
  const failed: Array<string> = []
  for (const check of checks) {
    const passed = await check.run().then(
      () => true,
      () => false
    )
    if (!passed) failed.push((Object.entries(CHECKS).find(([, name]) => name === check.name) as [string, string])[0])
  }
  return failed
}

const invokeWith =
  (change: (call: ChatCall) => Effect.Effect<ChatReply, PluginFailure> | undefined) => (call: ChatCall) =>
    change(call) ?? invoke(call)
const refused = (call: ChatCall) => call.model.upstreamModel === "refuse"

describe("the declarative chat suite catches a planted bug in each check", () => {
  it("a correct plugin passes every check", async () => {
    assert.deepStrictEqual(await failedChecks(correct), [])
  })

  it("shape: a plugin of another spec version, or of another kind", async () => {
    assert.deepStrictEqual(await failedChecks({ ...correct, specificationVersion: "v2" as "v1" }), ["shape"])
    assert.deepStrictEqual(await failedChecks({ ...correct, kind: "chats" as "chat" }), ["shape"])
  })

  // The whole suite once per planted bug, the pricing property shrinking its counterexample each time: seconds apiece.
  it("pricing: a price above the estimate, a float, an impure estimate, cache reads billed above the hold", async () => {
    const twice = {
      ...correct.pricing,
      price: (usage: Usage, m: PluginModel) => 2n * correct.pricing.price(usage, m) + 1n
    }
    // A fixture call whose hold has room may still pass its own check: the property check is the one that must fail.
    const besidesAnswers = (failed: ReadonlyArray<string>) => failed.filter((check) => !check.startsWith("answers"))
    assert.deepStrictEqual(besidesAnswers(await failedChecks({ ...correct, pricing: twice })), ["pricing"])
    const float = { ...correct.pricing, price: (usage: Usage) => (usage.outputTokens * 0.5) as unknown as bigint }
    assert.deepStrictEqual(await failedChecks({ ...correct, pricing: float }), ["pricing", "answers", "answersStream"])
    let calls = 0n
    const impure = {
      ...correct.pricing,
      estimate: (...args: Parameters<ChatPlugin["pricing"]["estimate"]>) => correct.pricing.estimate(...args) + calls++
    }
    assert.deepStrictEqual(await failedChecks({ ...correct, pricing: impure }), ["pricing"])
    // The default usage covered by a hold splits the prompt into input, cache reads and writes: a plugin that bills a
    // cache write at ten times the input price it held for is caught.
    const cacheWrites = {
      ...correct.pricing,
      price: (usage: Usage, m: PluginModel) =>
        correct.pricing.price(usage, m) + perMillion(10 * usage.cacheWriteTokens, m.pricing.input)
    }
    assert.deepStrictEqual(await failedChecks({ ...correct, pricing: cacheWrites }), ["pricing"])
  }, 120_000)

  it("answers: usage over the hold, a stream without usage, a streamed request answered whole, a defect", async () => {
    const overReported = invokeWith((call) =>
      call.request.stream || call.signal.aborted || refused(call)
        ? undefined
        : Effect.map(invoke(call), (reply) => {
            const body = (reply as { body: { usage: { completion_tokens: number } } }).body
            return { ...reply, body: { ...body, usage: { ...body.usage, completion_tokens: 1_000 } } } as ChatReply
          })
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: overReported }), ["answers", "expect"])
    const noUsage = invokeWith((call) =>
      call.request.stream && !call.signal.aborted
        ? Effect.succeed({
            _tag: "Events",
            dialect: "openai",
            events: (async function* () {
              yield { data: "[DONE]" }
            })()
          })
        : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: noUsage }), ["answersStream", "expectStream"])
    const whole = invokeWith((call) =>
      call.request.stream ? invoke({ ...call, request: { ...call.request, stream: false } }) : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: whole }), ["answersStream", "expectStream"])
    const dies = invokeWith((call) =>
      !call.request.stream && !call.signal.aborted && !refused(call) ? Effect.die("boom") : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: dies }), ["answers", "expect"])
  })

  it("abort: a plugin that answers although aborted, one that hangs, one that dies", async () => {
    const deaf: UpstreamHttp = {
      request: (request) => http.request({ ...request, signal: new AbortController().signal })
    }
    assert.deepStrictEqual(await failedChecks(correct, { http: deaf }), ["abort", "abortStream"])
    const hangs = invokeWith((call) => (call.signal.aborted ? Effect.never : undefined))
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: hangs }), ["abort", "abortStream"])
    const dies = invokeWith((call) => (call.signal.aborted ? Effect.die("aborted badly") : undefined))
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: dies }), ["abort", "abortStream"])
  })

  it("failing: a wrong failure reason, a failing call that answers, a failure that is a defect", async () => {
    const unavailable = invokeWith((call) =>
      refused(call)
        ? Effect.fail({ _tag: "PluginFailure", reason: "unavailable", message: "could not reach anything" })
        : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: unavailable }), ["failing"])
    const answers = invokeWith((call) => (refused(call) ? invoke({ ...call, model: model("words-1") }) : undefined))
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: answers }), ["failing"])
    const throws = invokeWith((call) => (refused(call) ? Effect.die(new Error("thrown")) : undefined))
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: throws }), ["failing"])
  })

  it("expect: a reply whose text is not what the vendor said", async () => {
    const garbled = invokeWith((call) =>
      call.request.stream || call.signal.aborted || refused(call)
        ? undefined
        : Effect.map(invoke(call), (reply) => {
            const body = (reply as { body: Record<string, unknown> }).body
            return {
              ...reply,
              body: { ...body, choices: [{ index: 0, message: { role: "assistant", content: "?" } }] }
            } as ChatReply
          })
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: garbled }), ["expect"])
  })
})
