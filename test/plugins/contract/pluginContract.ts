/**
 * The plugin contract as tests: any chat plugin, ours or a third party's, registers this suite against itself with
 * `describePluginContract(name, plugin, fixtures)`. It checks what the gateway relies on and cannot check at run time:
 * - the value passes the registry's shape check and declares sane pricing keys;
 * - `estimate` and `price` are pure, total, non-negative integer micro-dollars (bigint), monotonic in tokens, and
 *   `price(usage) ≤ estimate` whenever the usage stays inside the bounds the hold was placed for (input tokens at most
 *   the counted input, output tokens at most the output cap);
 * - `invoke` answers every fixture request, plain and streamed, with a reply the gateway can read (a body its
 *   converters parse, or SSE frames that parse and end with the dialect's terminator) that carries usage within the
 *   output cap;
 * - an aborted signal makes `invoke` fail with a `PluginFailure` or stop its stream, never die or hang;
 * - `countInput`, when offered, is pure and a non-negative integer.
 *
 * The output cap is the gateway's: the request's `max_tokens`, never above the model's `maxOutputTokens`.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Result } from "effect"
import fc from "fast-check"
import { isPluginFailure } from "@tollgate/plugin-spec/contract"
import { pluginShapeProblems } from "@tollgate/plugin-spec/shape"
import type { ChatCall, ChatPlugin, ChatReply, PluginModel, SseFrame } from "../../../src/plugins/ModelPlugin.ts"
import { anthropicRequestToIR } from "../../../src/plugins/text/convert/anthropicRequestToIR.ts"
import { anthropicResponseToIR } from "../../../src/plugins/text/convert/anthropicResponse.ts"
import type { ChatRequest, Converted, Usage } from "../../../src/plugins/text/convert/ChatIR.ts"
import { geminiRequestToIR } from "../../../src/plugins/text/convert/geminiRequestToIR.ts"
import { geminiResponseToIR } from "../../../src/plugins/text/convert/geminiResponse.ts"
import { openAIRequestToIR } from "../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { openAIResponseToIR } from "../../../src/plugins/text/convert/openaiResponse.ts"
import { responsesRequestToIR } from "../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { responsesResponseToIR } from "../../../src/plugins/text/convert/responsesResponse.ts"
import { type Dialect, makeStreamTransducer } from "../../../src/plugins/text/convert/StreamTransducer.ts"

export type Lazy<A> = A | (() => A)

/** One request as a client sends it, non-streamed; the suite also sends it streamed. */
export interface ContractRequest {
  readonly name: string
  readonly dialect: Dialect
  /** The client's body without `model` and `stream` (the suite sets them). */
  readonly body: Readonly<Record<string, unknown>>
}

export interface PluginContractFixtures {
  /** Models the plugin serves, as the registry hands them over; may be lazy (e.g. an upstream started in `beforeAll`). */
  readonly models: Lazy<ReadonlyArray<PluginModel>>
  /** At least one; every request is invoked against every model, plain and streamed. */
  readonly requests: ReadonlyArray<ContractRequest>
  /** fast-check runs per pricing property (default 200). */
  readonly numRuns?: number
  /** Longest one invoke, with reading its whole reply, may take (default 10 s). */
  readonly timeoutMs?: number
}

const force = <A>(value: Lazy<A>): A => (typeof value === "function" ? (value as () => A)() : value)

/** The output bound of a hold, as the gateway places it. */
export const outputCap = (request: ChatRequest, model: PluginModel): number =>
  Math.max(0, Math.min(request.maxTokens ?? model.maxOutputTokens, model.maxOutputTokens))

// ---------------------------------------------------------------------------------------------------------------------
// Requests

export const requestBody = (request: ContractRequest, model: PluginModel, stream: boolean): Record<string, unknown> => {
  switch (request.dialect) {
    case "openai":
      return {
        ...request.body,
        model: model.id,
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {})
      }
    case "anthropic":
    case "responses":
      return { ...request.body, model: model.id, stream }
    case "gemini":
      return { ...request.body }
  }
}

const ok = <A>(converted: Converted<A>, what: string): A => {
  if (Result.isFailure(converted)) {
    assert.fail(`${what}: ${converted.failure.param}: ${converted.failure.message}`)
  }
  return converted.success
}

export const requestIR = (request: ContractRequest, model: PluginModel, stream: boolean): ChatRequest => {
  const body = requestBody(request, model, stream)
  const what = `fixture ${request.name} is not a valid ${request.dialect} request`
  switch (request.dialect) {
    case "openai":
      return ok(openAIRequestToIR(body), what)
    case "anthropic":
      return ok(anthropicRequestToIR(body), what)
    case "gemini":
      return ok(geminiRequestToIR(body, { model: model.id, stream }), what)
    case "responses":
      return ok(responsesRequestToIR(body), what)
  }
}

export const chatCall = (
  request: ContractRequest,
  model: PluginModel,
  stream: boolean,
  signal: AbortSignal = new AbortController().signal
): ChatCall => ({
  model,
  request: requestIR(request, model, stream),
  client: { dialect: request.dialect, body: requestBody(request, model, stream) },
  requestId: `contract-${request.name.replaceAll(/\W+/g, "-")}`,
  signal
})

// ---------------------------------------------------------------------------------------------------------------------
// Arbitraries

const price = fc.bigInt({ min: 0n, max: 1_000_000_000n })

/** A model of the plugin's with any pricing the plugin accepts and any output cap. */
const modelArbitrary = (plugin: ChatPlugin, models: ReadonlyArray<PluginModel>): fc.Arbitrary<PluginModel> => {
  const { allowed, required } = plugin.pricingKeys
  const prices = allowed.map((key) =>
    required.includes(key)
      ? price.map((micros) => [key, micros] as const)
      : fc.option(price, { nil: undefined }).map((micros) => [key, micros] as const)
  )
  return fc
    .record({
      base: fc.constantFrom(...models),
      prices: fc.tuple(...prices),
      maxOutputTokens: fc.integer({ min: 1, max: 1_000_000 })
    })
    .map(({ base, prices, maxOutputTokens }) => ({
      ...base,
      pricing: Object.fromEntries(prices.filter(([, micros]) => micros !== undefined)),
      maxOutputTokens
    }))
}

const withMaxTokens = (request: ChatRequest, maxTokens: number | undefined): ChatRequest => {
  const { maxTokens: _, ...rest } = request
  return maxTokens === undefined ? rest : { ...rest, maxTokens }
}

const requestArbitrary = (requests: ReadonlyArray<ChatRequest>): fc.Arbitrary<ChatRequest> =>
  fc
    .tuple(fc.constantFrom(...requests), fc.option(fc.integer({ min: 1, max: 2_000_000 }), { nil: undefined }))
    .map(([request, maxTokens]) => withMaxTokens(request, maxTokens))

const count = (max: number) => fc.integer({ min: 0, max })

const usageArbitrary: fc.Arbitrary<Usage> = fc.record({
  inputTokens: count(2_000_000),
  outputTokens: count(2_000_000),
  cacheReadTokens: count(2_000_000),
  cacheWriteTokens: count(2_000_000),
  reasoningTokens: count(2_000_000)
})

/** Usage the hold was placed for: input (cache included) at most `inputTokens`, output at most `cap`. */
const usageWithin = (inputTokens: number, cap: number): fc.Arbitrary<Usage> =>
  fc.tuple(count(inputTokens), count(cap)).chain(([input, output]) =>
    fc.tuple(count(input), count(output)).chain(([cacheRead, reasoning]) =>
      count(input - cacheRead).map((cacheWrite) => ({
        inputTokens: input - cacheRead - cacheWrite,
        cacheReadTokens: cacheRead,
        cacheWriteTokens: cacheWrite,
        outputTokens: output,
        reasoningTokens: reasoning
      }))
    )
  )

const deepFreeze = <A>(value: A): A => {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key])
  }
  return value
}

const assertMicros = (value: unknown, what: string): bigint => {
  assert.strictEqual(typeof value, "bigint", `${what} must be a bigint of micro-dollars, got ${typeof value}`)
  assert.isTrue((value as bigint) >= 0n, `${what} must not be negative, got ${String(value)}`)
  return value as bigint
}

// ---------------------------------------------------------------------------------------------------------------------
// Replies

/** A Body reply as the gateway reads it. */
export const responseToIR = (dialect: Dialect, body: unknown, model: PluginModel) => {
  switch (dialect) {
    case "openai":
      return openAIResponseToIR(body)
    case "anthropic":
      return anthropicResponseToIR(body)
    case "gemini":
      return geminiResponseToIR(body, { fallbackId: "contract", fallbackModel: model.id })
    case "responses":
      return responsesResponseToIR(body)
  }
}

const totalInput = (usage: Usage) => usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens

type Drained = { readonly frames: ReadonlyArray<SseFrame>; readonly failed?: unknown }

/** Reads an iterator to its end, or until `onFrame` says stop; a throw is returned as `failed`. */
export const drainIterator = (
  iterator: AsyncIterator<SseFrame>,
  onFrame: (frame: SseFrame, index: number) => boolean = () => true
): Promise<Drained> => {
  const frames: Array<SseFrame> = []
  const step = (): Promise<Drained> =>
    iterator.next().then(
      (result) => {
        if (result.done === true) return { frames }
        frames.push(result.value)
        return onFrame(result.value, frames.length - 1) ? step() : { frames }
      },
      (failed: unknown) => ({ frames, failed })
    )
  return step()
}

export const drain = (events: AsyncIterable<SseFrame>): Promise<Drained> =>
  drainIterator(events[Symbol.asyncIterator]())

const parseFrame = (frame: SseFrame, index: number): unknown => {
  assert.strictEqual(typeof frame.data, "string", `frame ${index}: data must be a string`)
  if (frame.data === "[DONE]") return "[DONE]"
  try {
    return JSON.parse(frame.data) as unknown
  } catch {
    return assert.fail(`frame ${index} is not JSON: ${frame.data.slice(0, 200)}`)
  }
}

const otherDialect = (dialect: Dialect): Dialect => (dialect === "openai" ? "anthropic" : "openai")

/** Feeds frames to the gateway's own stream transducer, converting to another dialect as a client would see them. */
const transduce = (dialect: Dialect, frames: ReadonlyArray<SseFrame>, model: PluginModel) => {
  const transducer = makeStreamTransducer({
    upstream: dialect,
    client: otherDialect(dialect),
    created: 1_760_000_000,
    fallbackId: "contract",
    fallbackModel: model.id,
    includeUsage: true
  })
  const out = frames.flatMap((frame, index) => {
    const data = parseFrame(frame, index)
    return transducer.push({ ...(frame.event === undefined ? {} : { event: frame.event }), data })
  })
  out.push(...transducer.end())
  return { out, snapshot: transducer.snapshot() }
}

const assertTerminator = (dialect: Dialect, frames: ReadonlyArray<SseFrame>) => {
  const last = frames.at(-1)
  if (dialect === "openai") assert.strictEqual(last?.data, "[DONE]", "an OpenAI stream must end with data: [DONE]")
  if (dialect === "anthropic") {
    const data = last === undefined ? undefined : (parseFrame(last, frames.length - 1) as { type?: unknown })
    assert.strictEqual(data?.type, "message_stop", "an Anthropic stream must end with message_stop")
  }
}

/** An exit is acceptable for a cancelled call when it succeeded or failed with a PluginFailure: no defect. */
const assertNoDefect = (exit: Exit.Exit<ChatReply, unknown>) => {
  if (Exit.isSuccess(exit)) return
  assert.isFalse(Cause.hasDies(exit.cause), `invoke died instead of failing: ${Cause.pretty(exit.cause)}`)
  const error = Cause.findErrorOption(exit.cause)
  if (error._tag === "Some") {
    assert.isTrue(isPluginFailure(error.value), `invoke failed with something other than a PluginFailure`)
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// The suite

export const describePluginContract = (name: string, lazyPlugin: Lazy<ChatPlugin>, fixtures: PluginContractFixtures) =>
  describe(`plugin contract: ${name}`, () => {
    const numRuns = fixtures.numRuns ?? 200
    const timeout = fixtures.timeoutMs ?? 10_000
    const plugin = () => force(lazyPlugin)
    const models = () => force(fixtures.models)
    const requestsIR = () => models().flatMap((model) => fixtures.requests.map((r) => requestIR(r, model, false)))
    const within = <A, E>(effect: Effect.Effect<A, E>, what: string) =>
      effect.pipe(
        Effect.timeoutOrElse({
          duration: timeout,
          orElse: () => Effect.sync(() => assert.fail(`${what} did not finish within ${timeout} ms`))
        })
      )

    it("has the shape the registry accepts and declares known pricing keys", () => {
      assert.deepStrictEqual(pluginShapeProblems(plugin()), [])
      assert.strictEqual(plugin().kind, "chat", "this suite is for chat plugins")
      const { allowed, required } = plugin().pricingKeys
      assert.isTrue(Array.isArray(required), "pricingKeys.required must be an array")
      for (const key of allowed)
        assert.match(key, /^[a-z][A-Za-z0-9]*$/, `pricingKeys.allowed: ${key} is not a price key`)
      for (const key of required) assert.include(allowed, key, `pricingKeys.required: ${key} is not allowed`)
      assert.isAbove(fixtures.requests.length, 0, "the fixtures name no request")
      assert.isAbove(models().length, 0, "the fixtures name no model")
    })

    it("counts input, when it offers to, purely and as a non-negative integer", () => {
      const countInput = plugin().countInput
      if (countInput === undefined) return
      for (const model of models()) {
        for (const request of fixtures.requests) {
          for (const stream of [false, true]) {
            const client = deepFreeze({ dialect: request.dialect, body: requestBody(request, model, stream) })
            const first = countInput(client)
            assert.isTrue(Number.isSafeInteger(first) && first >= 0, `countInput(${request.name}) = ${first}`)
            assert.strictEqual(countInput(client), first, `countInput(${request.name}) is not pure`)
          }
        }
      }
    })

    describe("pricing", () => {
      it("estimate is pure and returns non-negative bigint micro-dollars", () => {
        fc.assert(
          fc.property(
            modelArbitrary(plugin(), models()),
            requestArbitrary(requestsIR()),
            count(2_000_000),
            (model, request, inputTokens) => {
              const input = deepFreeze({ request, inputTokens })
              const frozen = deepFreeze(model)
              const first = assertMicros(plugin().pricing.estimate(input, frozen), "estimate")
              assert.strictEqual(plugin().pricing.estimate({ request, inputTokens }, model), first)
            }
          ),
          { numRuns }
        )
      })

      it("price is pure and returns non-negative bigint micro-dollars", () => {
        fc.assert(
          fc.property(modelArbitrary(plugin(), models()), usageArbitrary, (model, usage) => {
            const first = assertMicros(plugin().pricing.price(deepFreeze({ ...usage }), deepFreeze(model)), "price")
            assert.strictEqual(plugin().pricing.price({ ...usage }, model), first)
          }),
          { numRuns }
        )
      })

      it("price never exceeds the estimate for usage within the hold's bounds", () => {
        const cases = fc
          .tuple(modelArbitrary(plugin(), models()), requestArbitrary(requestsIR()), count(200_000))
          .chain(([model, request, inputTokens]) =>
            usageWithin(inputTokens, outputCap(request, model)).map((usage) => ({ model, request, inputTokens, usage }))
          )
        fc.assert(
          fc.property(cases, ({ model, request, inputTokens, usage }) => {
            const estimate = plugin().pricing.estimate({ request, inputTokens }, model)
            const price = plugin().pricing.price(usage, model)
            assert.isTrue(price <= estimate, `price ${price} > estimate ${estimate} for ${JSON.stringify(usage)}`)
          }),
          { numRuns }
        )
      })

      it("estimate grows with input tokens and with max_tokens", () => {
        fc.assert(
          fc.property(
            modelArbitrary(plugin(), models()),
            requestArbitrary(requestsIR()),
            fc.tuple(count(2_000_000), count(2_000_000)),
            fc.tuple(fc.integer({ min: 1, max: 2_000_000 }), fc.integer({ min: 1, max: 2_000_000 })),
            (model, request, inputs, caps) => {
              const [fewer, more] = [...inputs].sort((a, b) => a - b)
              const [low, high] = [...caps].sort((a, b) => a - b)
              const { estimate } = plugin().pricing
              assert.isTrue(
                estimate({ request, inputTokens: fewer }, model) <= estimate({ request, inputTokens: more }, model),
                "more input tokens must not lower the estimate"
              )
              assert.isTrue(
                estimate({ request: withMaxTokens(request, low), inputTokens: fewer }, model) <=
                  estimate({ request: withMaxTokens(request, high), inputTokens: fewer }, model),
                "a higher max_tokens must not lower the estimate"
              )
            }
          ),
          { numRuns }
        )
      })

      it("price grows with every usage count", () => {
        const fields = [
          "inputTokens",
          "outputTokens",
          "cacheReadTokens",
          "cacheWriteTokens",
          "reasoningTokens"
        ] as const
        fc.assert(
          fc.property(
            modelArbitrary(plugin(), models()),
            usageArbitrary,
            fc.constantFrom(...fields),
            count(1_000_000),
            (model, usage, field, extra) => {
              const more = { ...usage, [field]: usage[field] + extra }
              const { price } = plugin().pricing
              assert.isTrue(price(usage, model) <= price(more, model), `more ${field} must not lower the price`)
            }
          ),
          { numRuns }
        )
      })
    })

    describe("invoke", () => {
      for (const request of fixtures.requests) {
        it.live(`${request.name}: answers a body the gateway reads, with usage within the cap`, () =>
          Effect.gen(function* () {
            for (const model of models()) {
              const call = chatCall(request, model, false)
              const reply = yield* within(plugin().invoke(call), `invoke ${request.name} on ${model.id}`)
              assert.strictEqual(reply._tag, "Body", `a non-streamed request on ${model.id} must get a Body`)
              if (reply._tag !== "Body") continue
              const ir = responseToIR(reply.dialect, reply.body, model)
              if (Result.isFailure(ir)) {
                return assert.fail(`the ${reply.dialect} body does not convert: ${ir.failure.message}`)
              }
              const usage = ir.success.usage
              assert.isAbove(totalInput(usage) + usage.outputTokens, 0, `${model.id}: the body carries no usage`)
              assert.isAtMost(usage.outputTokens, outputCap(call.request, model), `${model.id}: output above the cap`)
            }
          })
        )

        it.live(`${request.name}: streams frames that parse, end properly and carry usage`, () =>
          Effect.gen(function* () {
            for (const model of models()) {
              const call = chatCall(request, model, true)
              const reply = yield* within(plugin().invoke(call), `invoke ${request.name} (streamed) on ${model.id}`)
              if (reply._tag === "Body") {
                // A plugin may answer a streamed request whole; the gateway then answers with JSON.
                assert.isTrue(Result.isSuccess(responseToIR(reply.dialect, reply.body, model)))
                continue
              }
              const read = yield* within(
                Effect.promise(() => drain(reply.events)),
                `reading ${request.name} on ${model.id}`
              )
              assert.isUndefined(read.failed, `${model.id}: the stream failed: ${String(read.failed)}`)
              assert.isAbove(read.frames.length, 0, `${model.id}: the stream is empty`)
              assertTerminator(reply.dialect, read.frames)
              const { out, snapshot } = transduce(reply.dialect, read.frames, model)
              assert.isAbove(out.length, 0)
              assert.isTrue(snapshot.finished, `${model.id}: the stream never finished`)
              assert.isFalse(snapshot.truncated, `${model.id}: the stream ended without its terminator`)
              assert.isUndefined(snapshot.error, `${model.id}: the stream carried an error`)
              const usage = snapshot.usage
              assert.isDefined(usage, `${model.id}: the stream carried no usage`)
              if (usage === undefined) continue
              assert.isAbove(totalInput(usage) + usage.outputTokens, 0, `${model.id}: the stream's usage is empty`)
              assert.isAtMost(usage.outputTokens, outputCap(call.request, model), `${model.id}: output above the cap`)
            }
          })
        )
      }

      it.live("fails with a PluginFailure or stops, never dies or hangs, when the signal is already aborted", () =>
        Effect.gen(function* () {
          const request = fixtures.requests[0]
          const model = models()[0]
          for (const stream of [false, true]) {
            const controller = new AbortController()
            controller.abort()
            const exit = yield* within(
              Effect.exit(plugin().invoke(chatCall(request, model, stream, controller.signal))),
              `invoke with an aborted signal (stream: ${stream})`
            )
            assertNoDefect(exit)
            if (Exit.isSuccess(exit) && exit.value._tag === "Events") {
              const events = exit.value.events
              yield* within(
                Effect.promise(() => drain(events)),
                "reading a stream whose signal was aborted"
              )
            }
          }
        })
      )

      it.live("stops a stream when the signal is aborted after the first frame", () =>
        Effect.gen(function* () {
          const request = fixtures.requests[0]
          const model = models()[0]
          const controller = new AbortController()
          const reply = yield* within(
            Effect.exit(plugin().invoke(chatCall(request, model, true, controller.signal))),
            "invoke (streamed)"
          )
          assertNoDefect(reply)
          if (Exit.isFailure(reply) || reply.value._tag === "Body") return
          const iterator = reply.value.events[Symbol.asyncIterator]()
          const first = yield* within(
            Effect.promise(() => drainIterator(iterator, () => false)),
            "the first frame"
          )
          controller.abort()
          const rest = yield* within(
            Effect.promise(() => drainIterator(iterator)),
            "the stream after abort"
          )
          const dialect = reply.value.dialect
          const { snapshot } = transduce(dialect, [...first.frames, ...rest.frames], model)
          const completed = snapshot.finished && !snapshot.truncated && snapshot.error === undefined
          assert.isFalse(
            completed && rest.failed === undefined,
            "the stream ran to its normal end although the signal was aborted after the first frame"
          )
        })
      )
    })
  })
