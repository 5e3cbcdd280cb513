import Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it, layer } from "@effect/vitest"
import { ApiError, GoogleGenAI } from "@google/genai"
import { Effect } from "effect"
import OpenAI from "openai"
import { parseFaultHeader, resolveFaults } from "../../../src/adapters/simulator/Faults.ts"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"

type AnthropicError = InstanceType<typeof Anthropic.APIError>

type Sim = Simulator["Service"]

const openai = (sim: Sim, maxRetries = 0) =>
  new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries })
const anthropic = (sim: Sim) => new Anthropic({ apiKey: sim.apiKey, baseURL: sim.baseUrl, maxRetries: 0 })

const failure = <A>(promise: Promise<A>) =>
  Effect.promise(() =>
    promise.then(
      () => undefined,
      (error: unknown) => error
    )
  )

/** A raw streamed chat completion: the SSE frames received before the body ended or failed. */
const rawStream = (
  sim: Sim,
  fault: string,
  options: { readonly maxFrames?: number; readonly timeoutMs?: number } = {}
) =>
  Effect.promise(async () => {
    const started = performance.now()
    const response = await fetch(`${sim.baseUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${sim.apiKey}`, "content-type": "application/json", "x-sim-fault": fault },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: "fault test" }] }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 5_000)
    })
    const firstByteMs = performance.now() - started
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    let text = ""
    let failed: unknown
    for (;;) {
      const next = await reader.read().catch((error: unknown) => {
        failed = error
        return { done: true as const, value: undefined }
      })
      if (next.done) break
      text += decoder.decode(next.value, { stream: true })
      if (options.maxFrames !== undefined && text.split("\n\n").length > options.maxFrames) {
        await reader.cancel()
        break
      }
    }
    const frames = text.split("\n\n").filter((frame) => frame.length > 0)
    return { status: response.status, frames, failed, firstByteMs, totalMs: performance.now() - started }
  })

describe("fault header parsing", () => {
  it("reads numbers and flags and ignores junk", () => {
    assert.deepStrictEqual(parseFaultHeader("status=429, retry-after=1.5; cut=3,endless,bogus=1,latency=x"), {
      reset: false,
      knobs: { status: 429, retryAfterSeconds: 1.5, cutAfter: 3, endless: true }
    })
  })

  it("overrides instance knobs key by key, or drops them with none", () => {
    assert.deepStrictEqual(resolveFaults({ status: 500, latencyMs: 10 }, "latency=20"), { status: 500, latencyMs: 20 })
    assert.deepStrictEqual(resolveFaults({ status: 500 }, "none"), {})
    assert.deepStrictEqual(resolveFaults({ status: 500 }, "none, cut=2"), { cutAfter: 2 })
    assert.deepStrictEqual(resolveFaults({ status: 500 }, undefined), { status: 500 })
  })
})

layer(Simulator.layer)("fault knobs", (it) => {
  it.effect("forced 429 carries retry-after in OpenAI's envelope", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const error = yield* failure(
        openai(sim).chat.completions.create(
          { model: "m", messages: [{ role: "user", content: "x" }] },
          { headers: { "x-sim-fault": "status=429, retry-after=2" } }
        )
      )
      assert.instanceOf(error, OpenAI.RateLimitError)
      const rate = error as InstanceType<typeof OpenAI.RateLimitError>
      assert.strictEqual(rate.headers.get("retry-after"), "2")
      assert.strictEqual(rate.code, "rate_limit_exceeded")
    })
  )

  it.effect("forced 529 is overloaded_error for Anthropic and 500 is INTERNAL for Gemini", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const overloaded = yield* failure(
        anthropic(sim).messages.create(
          { model: "m", max_tokens: 8, messages: [{ role: "user", content: "x" }] },
          { headers: { "x-sim-fault": "status=529" } }
        )
      )
      assert.instanceOf(overloaded, Anthropic.APIError)
      assert.strictEqual((overloaded as AnthropicError).status, 529)
      assert.strictEqual(
        ((overloaded as AnthropicError).error as { error: { type: string } }).error.type,
        "overloaded_error"
      )

      const ai = new GoogleGenAI({ apiKey: sim.apiKey, httpOptions: { baseUrl: sim.baseUrl } })
      const internal = yield* failure(
        ai.models.generateContent({
          model: "gemini-2.5-flash",
          contents: "x",
          config: { httpOptions: { headers: { "x-sim-fault": "status=500" } } }
        })
      )
      assert.instanceOf(internal, ApiError)
      assert.strictEqual((internal as ApiError).status, 500)
      assert.include((internal as ApiError).message, "INTERNAL")
    })
  )

  it.effect("instance knobs for the next N requests: the SDK retries through two 429s", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      yield* sim.clearCalls
      yield* sim.setFaults({ status: 429, retryAfterSeconds: 0.01 }, 2)
      const reply = yield* Effect.promise(() =>
        openai(sim, 2).chat.completions.create({ model: "m", messages: [{ role: "user", content: "retry me" }] })
      )
      assert.isTrue(reply.choices[0]!.message.content!.startsWith("Echo: retry me"))
      assert.strictEqual((yield* sim.calls).length, 3)
      yield* sim.clearFaults
    })
  )

  it.effect("latency delays the first byte; chunk delay spaces the events", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const slow = yield* rawStream(sim, "latency=200")
      assert.isAtLeast(slow.firstByteMs, 190)
      assert.strictEqual(slow.frames[slow.frames.length - 1], "data: [DONE]")
      const spaced = yield* rawStream(sim, "chunk-delay=20")
      assert.isAtLeast(spaced.totalMs, 20 * (spaced.frames.length - 1) - 10)
    })
  )

  it.effect("cut closes the socket after N events without the closing events", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const cut = yield* rawStream(sim, "cut=3")
      assert.strictEqual(cut.frames.length, 3)
      assert.isDefined(cut.failed)
      assert.isFalse(cut.frames.some((frame) => frame.includes("[DONE]") || frame.includes('"usage":{')))

      const error = yield* failure(
        anthropic(sim)
          .messages.stream(
            { model: "m", max_tokens: 64, messages: [{ role: "user", content: "x" }] },
            { headers: { "x-sim-fault": "cut=4" } }
          )
          .finalMessage()
      )
      assert.instanceOf(error, Error)
    })
  )

  it.effect("error-after sends the vendor's in-band error, which the SDKs raise", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const openaiError = yield* failure(
        (async () => {
          const stream = await openai(sim).chat.completions.create(
            { model: "m", stream: true, messages: [{ role: "user", content: "x" }] },
            { headers: { "x-sim-fault": "error-after=2" } }
          )
          for await (const _ of stream) {
            // drain
          }
        })()
      )
      assert.instanceOf(openaiError, OpenAI.APIError)

      const anthropicError = yield* failure(
        anthropic(sim)
          .messages.stream(
            { model: "m", max_tokens: 64, messages: [{ role: "user", content: "x" }] },
            { headers: { "x-sim-fault": "error-after=3" } }
          )
          .finalMessage()
      )
      assert.instanceOf(anthropicError, Anthropic.APIError)
      assert.include(String(anthropicError), "overloaded_error")

      const ai = new GoogleGenAI({ apiKey: sim.apiKey, httpOptions: { baseUrl: sim.baseUrl } })
      const geminiError = yield* failure(
        (async () => {
          const stream = await ai.models.generateContentStream({
            model: "gemini-2.5-flash",
            contents: "x",
            config: { httpOptions: { headers: { "x-sim-fault": "error-after=2" } } }
          })
          for await (const _ of stream) {
            // drain
          }
        })()
      )
      assert.instanceOf(geminiError, ApiError)
      assert.strictEqual((geminiError as ApiError).status, 503)
    })
  )

  it.effect("stall keeps the connection open after N events; endless never finishes", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const stalled = yield* rawStream(sim, "stall=2", { timeoutMs: 300 })
      assert.strictEqual(stalled.frames.length, 2)
      assert.isDefined(stalled.failed)

      const endless = yield* rawStream(sim, "endless", { maxFrames: 60 })
      assert.isAtLeast(endless.frames.length, 60)
      assert.isFalse(endless.frames.some((frame) => frame.includes("[DONE]")))
    })
  )

  it.effect("malformed bodies break the client's JSON parsing", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const error = yield* failure(
        openai(sim).chat.completions.create(
          { model: "m", messages: [{ role: "user", content: "x" }] },
          { headers: { "x-sim-fault": "malformed" } }
        )
      )
      assert.instanceOf(error, Error)
      const stream = yield* rawStream(sim, "malformed")
      assert.throws(() => JSON.parse(stream.frames[1]!.slice("data: ".length)))
    })
  )

  it.effect("tokens sets the reply length per request", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* Effect.promise(() =>
        openai(sim).chat.completions.create(
          { model: "m", messages: [{ role: "user", content: "long one" }] },
          { headers: { "x-sim-fault": "tokens=300" } }
        )
      )
      assert.strictEqual(reply.usage!.completion_tokens, 300)
    })
  )
})
