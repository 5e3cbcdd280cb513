/**
 * The cache knobs: each text route reports prompt-cache reads and writes with its vendor's field semantics, in JSON
 * and in streams, set on the instance or by `x-sim-fault`, capped by the prompt; with the knobs at 0 nothing changes.
 */
import Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it, layer } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import { Effect } from "effect"
import OpenAI from "openai"
import { parseFaultHeader, resolveFaults } from "../../../src/adapters/simulator/Faults.ts"
import { promptCache } from "../../../src/adapters/simulator/PromptCache.ts"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"

type Sim = Pick<Simulator["Service"], "baseUrl" | "apiKey">
type Usage = Record<string, unknown>

const PROMPT = "You are a careful assistant. Remember this long, stable preamble about billing, caching and tokens."
const MESSAGES = [{ role: "user", content: PROMPT }]
const CONTENTS = [{ role: "user", parts: [{ text: PROMPT }] }]

const post = (sim: Sim, path: string, body: unknown, headers: Record<string, string>, fault: string | undefined) =>
  Effect.promise(() =>
    fetch(`${sim.baseUrl}${path}`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...headers,
        ...(fault === undefined ? {} : { "x-sim-fault": fault })
      },
      body: JSON.stringify(body)
    }).then((response) => response.text())
  )

/** The JSON of every `data:` line of an SSE body, `[DONE]` left out. */
const sseData = (text: string): ReadonlyArray<Usage> =>
  text
    .split("\n\n")
    .flatMap((frame) => frame.split("\n").filter((line) => line.startsWith("data: ")))
    .map((line) => line.slice(6))
    .filter((data) => data !== "[DONE]")
    .map((data) => JSON.parse(data) as Usage)

const at = (value: unknown, ...path: ReadonlyArray<string>): Usage =>
  path.reduce<unknown>((inner, key) => (inner as Usage)[key], value) as Usage

/** Every usage object the four text routes report for the same prompt, JSON and streamed. */
const usages = (sim: Sim, fault?: string) =>
  Effect.gen(function* () {
    const openai = { authorization: `Bearer ${sim.apiKey}` }
    const anthropic = { "x-api-key": sim.apiKey, "anthropic-version": "2023-06-01" }
    const chat = yield* post(sim, "/v1/chat/completions", { model: "m", messages: MESSAGES }, openai, fault)
    const chatStream = yield* post(
      sim,
      "/v1/chat/completions",
      { model: "m", messages: MESSAGES, stream: true, stream_options: { include_usage: true } },
      openai,
      fault
    )
    const responses = yield* post(sim, "/v1/responses", { model: "m", input: PROMPT }, openai, fault)
    const responsesStream = yield* post(
      sim,
      "/v1/responses",
      { model: "m", input: PROMPT, stream: true },
      openai,
      fault
    )
    const message = yield* post(
      sim,
      "/v1/messages",
      { model: "m", max_tokens: 200, messages: MESSAGES },
      anthropic,
      fault
    )
    const messageStream = sseData(
      yield* post(
        sim,
        "/v1/messages",
        { model: "m", max_tokens: 200, messages: MESSAGES, stream: true },
        anthropic,
        fault
      )
    )
    const gemini = `/v1beta/models/gemini-2.5-flash`
    const generate = yield* post(sim, `${gemini}:generateContent?key=${sim.apiKey}`, { contents: CONTENTS }, {}, fault)
    const geminiSse = sseData(
      yield* post(sim, `${gemini}:streamGenerateContent?alt=sse&key=${sim.apiKey}`, { contents: CONTENTS }, {}, fault)
    )
    const geminiArray = JSON.parse(
      yield* post(sim, `${gemini}:streamGenerateContent?key=${sim.apiKey}`, { contents: CONTENTS }, {}, fault)
    ) as ReadonlyArray<Usage>
    return {
      chat: at(JSON.parse(chat), "usage"),
      chatStream: at(sseData(chatStream).at(-1), "usage"),
      responses: at(JSON.parse(responses), "usage"),
      responsesStream: at(sseData(responsesStream).at(-1), "response", "usage"),
      message: at(JSON.parse(message), "usage"),
      messageStart: at(
        messageStream.find((event) => event.type === "message_start"),
        "message",
        "usage"
      ),
      messageDelta: at(
        messageStream.find((event) => event.type === "message_delta"),
        "usage"
      ),
      generate: at(JSON.parse(generate), "usageMetadata"),
      geminiSse: geminiSse.map((chunk) => at(chunk, "usageMetadata")),
      geminiArray: geminiArray.map((chunk) => at(chunk, "usageMetadata"))
    }
  })

type Usages = Effect.Success<ReturnType<typeof usages>>

interface Cache {
  readonly read: number
  readonly write: number
  readonly write1h: number
}

/** Every usage of `got` is the cache-free `base` one with the cache fields each vendor reports for `cache`. */
const assertCache = (got: Usages, base: Usages, { read, write, write1h }: Cache) => {
  const chat = (usage: Usage) => ({ ...usage, prompt_tokens_details: { cached_tokens: read, audio_tokens: 0 } })
  assert.deepStrictEqual(got.chat, chat(base.chat))
  assert.deepStrictEqual(got.chatStream, chat(base.chatStream))

  const responses = (usage: Usage) => ({
    ...usage,
    input_tokens_details: { cached_tokens: read, cache_write_tokens: write }
  })
  assert.deepStrictEqual(got.responses, responses(base.responses))
  assert.deepStrictEqual(got.responsesStream, responses(base.responsesStream))

  const anthropic = (usage: Usage) => ({
    ...usage,
    input_tokens: (usage.input_tokens as number) - read - write,
    cache_creation_input_tokens: write,
    cache_read_input_tokens: read
  })
  const ttl = { cache_creation: { ephemeral_5m_input_tokens: write - write1h, ephemeral_1h_input_tokens: write1h } }
  assert.deepStrictEqual(got.message, { ...anthropic(base.message), ...ttl })
  assert.deepStrictEqual(got.messageStart, { ...anthropic(base.messageStart), ...ttl })
  assert.deepStrictEqual(got.messageDelta, anthropic(base.messageDelta))

  const cached = read > 0 ? { cachedContentTokenCount: read } : {}
  const gemini = (usage: Usage) => ({
    ...usage,
    ...cached,
    ...(read > 0 ? { cacheTokensDetails: [{ modality: "TEXT", tokenCount: read }] } : {})
  })
  assert.deepStrictEqual(got.generate, gemini(base.generate))
  for (const [chunks, baseChunks] of [
    [got.geminiSse, base.geminiSse],
    [got.geminiArray, base.geminiArray]
  ] as const) {
    assert.isAbove(chunks.length, 1)
    assert.deepStrictEqual(chunks.at(-1), gemini(baseChunks.at(-1)!))
    // The chunks before the last carry the prompt's counts only, the cached ones among them.
    assert.deepStrictEqual(
      chunks.slice(0, -1),
      baseChunks.slice(0, -1).map((usage) => ({ ...usage, ...cached }))
    )
  }
}

/** The prompt's token count on each route: what the vendor saw, cached or not. */
const totals = (base: Usages) => ({
  chat: base.chat.prompt_tokens as number,
  responses: base.responses.input_tokens as number,
  anthropic: base.message.input_tokens as number,
  gemini: base.generate.promptTokenCount as number
})

describe("cache knobs", () => {
  it("are read from x-sim-fault and override the instance's key by key", () => {
    assert.deepStrictEqual(parseFaultHeader("cache-read=5, cache-write=7; cache-write-1h=2, cache-read=x"), {
      reset: false,
      knobs: { cacheReadTokens: 5, cacheWriteTokens: 7, cacheWrite1hTokens: 2 }
    })
    assert.deepStrictEqual(resolveFaults({ cacheReadTokens: 3, cacheWriteTokens: 4 }, "cache-write=9"), {
      cacheReadTokens: 3,
      cacheWriteTokens: 9
    })
  })

  it("are capped: reads by the prompt, writes by what the reads leave, 1-hour writes by the writes", () => {
    assert.deepStrictEqual(promptCache({}, 20), { read: 0, write: 0, write1h: 0 })
    assert.deepStrictEqual(promptCache({ cacheReadTokens: 5, cacheWriteTokens: 6, cacheWrite1hTokens: 2 }, 20), {
      read: 5,
      write: 6,
      write1h: 2
    })
    assert.deepStrictEqual(promptCache({ cacheReadTokens: 50, cacheWriteTokens: 6, cacheWrite1hTokens: 2 }, 20), {
      read: 20,
      write: 0,
      write1h: 0
    })
    assert.deepStrictEqual(promptCache({ cacheReadTokens: 5, cacheWriteTokens: 60, cacheWrite1hTokens: 90 }, 20), {
      read: 5,
      write: 15,
      write1h: 15
    })
    assert.deepStrictEqual(promptCache({ cacheReadTokens: 2.7, cacheWriteTokens: 3.2, cacheWrite1hTokens: -1 }, 20), {
      read: 2,
      write: 3,
      write1h: 0
    })
  })

  it.effect("at 0 leave every reply byte for byte as without them", () =>
    Effect.gen(function* () {
      // Two fresh simulators answer the same requests with the same ids, so their bodies compare whole.
      const raw = (sim: Sim) =>
        Effect.gen(function* () {
          const openai = { authorization: `Bearer ${sim.apiKey}` }
          const anthropic = { "x-api-key": sim.apiKey, "anthropic-version": "2023-06-01" }
          const bodies: Array<string> = []
          for (const stream of [false, true]) {
            const chat = {
              model: "m",
              messages: MESSAGES,
              stream,
              ...(stream ? { stream_options: { include_usage: true } } : {})
            }
            bodies.push(yield* post(sim, "/v1/chat/completions", chat, openai, undefined))
            bodies.push(yield* post(sim, "/v1/responses", { model: "m", input: PROMPT, stream }, openai, undefined))
            const message = { model: "m", max_tokens: 200, messages: MESSAGES, stream }
            bodies.push(yield* post(sim, "/v1/messages", message, anthropic, undefined))
          }
          for (const method of ["generateContent?", "streamGenerateContent?alt=sse&", "streamGenerateContent?"]) {
            const path = `/v1beta/models/gemini-2.5-flash:${method}key=${sim.apiKey}`
            bodies.push(yield* post(sim, path, { contents: CONTENTS }, {}, undefined))
          }
          return bodies
        })
      const plain = yield* Effect.promise(() => startSimulator())
      const zeroed = yield* Effect.promise(() =>
        startSimulator({ faults: { cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 } })
      )
      const expected = yield* raw(plain)
      const got = yield* raw(zeroed)
      yield* Effect.promise(() => Promise.all([plain.close(), zeroed.close()]))
      assert.strictEqual(expected.length, 9)
      assert.deepStrictEqual(got, expected)
      // And without the knobs, the reports stay cache-free in each vendor's way.
      assert.notInclude(expected.join("\n"), "cachedContentTokenCount")
      assert.include(expected[5], '"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens"')
    })
  )
})

layer(Simulator.layerWith({ faults: { cacheReadTokens: 3, cacheWriteTokens: 4, cacheWrite1hTokens: 1 } }))(
  "cache knobs on the instance",
  (it) => {
    it.effect("every text route reports them, in JSON and in streams", () =>
      Effect.gen(function* () {
        const sim = yield* Simulator
        const base = yield* usages(sim, "none")
        for (const total of Object.values(totals(base))) assert.isAbove(total, 7)
        assertCache(yield* usages(sim), base, { read: 3, write: 4, write1h: 1 })
      })
    )

    it.effect("the header overrides them key by key", () =>
      Effect.gen(function* () {
        const sim = yield* Simulator
        const base = yield* usages(sim, "none")
        assertCache(yield* usages(sim, "cache-write=6"), base, { read: 3, write: 6, write1h: 1 })
      })
    )
  }
)

layer(Simulator.layer)("cache knobs by header", (it) => {
  it.effect("every text route reports them, in JSON and in streams", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const base = yield* usages(sim)
      assertCache(yield* usages(sim, "cache-read=2, cache-write=5, cache-write-1h=5"), base, {
        read: 2,
        write: 5,
        write1h: 5
      })
    })
  )

  it.effect("reads beyond the prompt are capped at it and leave no room for writes", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const base = yield* usages(sim)
      const total = totals(base)
      const got = yield* usages(sim, "cache-read=100000, cache-write=50, cache-write-1h=10")
      assert.deepStrictEqual(got.chat.prompt_tokens_details, { cached_tokens: total.chat, audio_tokens: 0 })
      assert.deepStrictEqual(got.responsesStream.input_tokens_details, {
        cached_tokens: total.responses,
        cache_write_tokens: 0
      })
      assert.include(got.message, { input_tokens: 0, cache_read_input_tokens: total.anthropic })
      assert.include(got.messageDelta, { input_tokens: 0, cache_creation_input_tokens: 0 })
      assert.strictEqual(got.generate.cachedContentTokenCount, total.gemini)
      assert.strictEqual(got.generate.promptTokenCount, total.gemini)
    })
  )

  it.effect("writes are capped by what the reads leave, 1-hour writes by the writes", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const base = yield* usages(sim)
      const total = totals(base)
      const got = yield* usages(sim, "cache-read=2, cache-write=100000, cache-write-1h=100000")
      assert.deepStrictEqual(got.responses.input_tokens_details, {
        cached_tokens: 2,
        cache_write_tokens: total.responses - 2
      })
      for (const usage of [got.message, got.messageStart]) {
        assert.deepStrictEqual(usage.cache_creation, {
          ephemeral_5m_input_tokens: 0,
          ephemeral_1h_input_tokens: total.anthropic - 2
        })
      }
      assert.include(got.messageDelta, {
        input_tokens: 0,
        cache_read_input_tokens: 2,
        cache_creation_input_tokens: total.anthropic - 2
      })
      // OpenAI chat and Gemini report no writes.
      assert.deepStrictEqual(got.chat.prompt_tokens_details, { cached_tokens: 2, audio_tokens: 0 })
      assert.strictEqual(got.generate.cachedContentTokenCount, 2)
    })
  )

  it.effect("the vendors' SDKs read them", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const fault = { "x-sim-fault": "cache-read=4, cache-write=3, cache-write-1h=2" }
      const openai = new OpenAI({
        apiKey: sim.apiKey,
        baseURL: `${sim.baseUrl}/v1`,
        maxRetries: 0,
        defaultHeaders: fault
      })
      const chat = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "m", messages: [...MESSAGES] as never })
      )
      assert.strictEqual(chat.usage!.prompt_tokens_details!.cached_tokens, 4)
      const response = yield* Effect.promise(() => openai.responses.create({ model: "m", input: PROMPT }))
      assert.strictEqual(response.usage!.input_tokens_details.cached_tokens, 4)

      const anthropic = new Anthropic({
        apiKey: sim.apiKey,
        baseURL: sim.baseUrl,
        maxRetries: 0,
        defaultHeaders: fault
      })
      const request = { model: "m", max_tokens: 200, messages: [{ role: "user" as const, content: PROMPT }] }
      const plain = yield* Effect.promise(() => anthropic.messages.create(request))
      const streamed = yield* Effect.promise(() => anthropic.messages.stream(request).finalMessage())
      assert.deepStrictEqual(streamed.usage, plain.usage)
      // count_tokens answers the whole prompt; `input_tokens` leaves out what was read from or written to the cache.
      const counted = yield* Effect.promise(() => anthropic.messages.countTokens(request))
      assert.strictEqual(plain.usage.input_tokens, counted.input_tokens - 4 - 3)
      assert.strictEqual(plain.usage.cache_read_input_tokens, 4)
      assert.strictEqual(plain.usage.cache_creation_input_tokens, 3)
      assert.deepStrictEqual(plain.usage.cache_creation, { ephemeral_5m_input_tokens: 1, ephemeral_1h_input_tokens: 2 })

      const ai = new GoogleGenAI({ apiKey: sim.apiKey, httpOptions: { baseUrl: sim.baseUrl, headers: fault } })
      const generated = yield* Effect.promise(() =>
        ai.models.generateContent({ model: "gemini-2.5-flash", contents: CONTENTS })
      )
      assert.strictEqual(generated.usageMetadata!.cachedContentTokenCount, 4)
    })
  )
})
