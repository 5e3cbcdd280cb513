/**
 * The chat suite, declarative: a fixture says what the client asks (`{ prompt, maxTokens, stream, client }`) and what
 * the reply must say (`expect`); the suite builds the chat IR request and the client's body the gateway would hand the
 * plugin, reads the reply's text and usage in whichever dialect the plugin answers, and runs the shared checks (shape,
 * pricing, replies within the hold, abort, failure reasons) plus each fixture's expectation.
 */
import { Cause, Effect, Exit } from "effect"
import fc from "fast-check"
import { assert, describe, it } from "vitest"
import type { ChatCall, ChatPlugin, ChatPricingInput, Usage } from "../chat.ts"
import type { FailureReason, PluginFailure, PluginModel, TokenCounter, UpstreamHttp } from "../common.ts"
import { type ChatCallFixture, chatCallOf, chatRequestOf, outputCapOf } from "./chatRequests.ts"
import { type ReadReply, readChatReply } from "./chatReplies.ts"
import { type ContractCheck, contractChecks } from "./engine.ts"
import { fetchUpstreamHttp } from "./fetchUpstreamHttp.ts"

export type { ChatCallFixture } from "./chatRequests.ts"
export { chatCallOf, chatRequestOf, clientBodyOf } from "./chatRequests.ts"
export { type ReadReply, readBody, readChatReply } from "./chatReplies.ts"

/** What a fixture's reply must say. */
export interface ChatExpectation {
  /** The text a client would see: exactly this string, or matching this pattern. */
  readonly text?: string | RegExp | undefined
  /** Usage fields the reply must report, exactly. */
  readonly usage?: Partial<Usage> | undefined
}

export interface ChatFixtures {
  readonly models: ReadonlyArray<PluginModel>
  /** Calls that must be answered, with usage the hold covers (and what `expect` says). */
  readonly calls: ReadonlyArray<ChatCallFixture & { readonly expect?: ChatExpectation | undefined }>
  /** Calls that must fail with the reason each names (a refusing vendor: `invalid_request`; none reachable: `unavailable`). */
  readonly failing?: ReadonlyArray<ChatCallFixture & { readonly reason: FailureReason }> | undefined
  /** The HTTP capability the gateway would give; defaults to `fetchUpstreamHttp()`. */
  readonly http?: UpstreamHttp | undefined
  /**
   * The token counter pricing and calls are given, as the gateway gives its own (`o200k_base`). Default: one token per
   * character. A call's input count for its hold is `plugin.countInput(client)` or this counter over the client body's
   * JSON text (at least what the gateway counts).
   */
  readonly tokens?: TokenCounter | undefined
  /** How long one call may take (default 10 s). */
  readonly timeoutMs?: number | undefined
  /** Prompts to price (default: any string up to 200 characters: a price depends on the input count, drawn apart). */
  readonly prompts?: fc.Arbitrary<string> | undefined
  /**
   * Usages the hold for an input covers. Default: prompt tokens up to the input count (split among input, cache reads
   * and cache writes), output up to the request's cap (reasoning within it).
   */
  readonly usageWithin?: ((input: ChatPricingInput, model: PluginModel) => fc.Arbitrary<Usage>) | undefined
}

const CHARACTERS: TokenCounter = { encoding: "characters", count: (text) => text.length }

/** Usage inside what the hold for `input` covers (see `ChatFixtures.usageWithin`). */
export const chatUsageWithin = (input: ChatPricingInput, model: PluginModel): fc.Arbitrary<Usage> =>
  fc
    .tuple(
      fc.integer({ min: 0, max: Math.max(0, input.inputTokens) }),
      fc.nat(),
      fc.nat(),
      fc.integer({ min: 0, max: Math.max(0, outputCapOf(input.request, model)) }),
      fc.nat()
    )
    .map(([prompt, readShare, writeShare, output, reasoningShare]) => {
      const cacheReadTokens = prompt === 0 ? 0 : readShare % (prompt + 1)
      const cacheWriteTokens = prompt - cacheReadTokens === 0 ? 0 : writeShare % (prompt - cacheReadTokens + 1)
      return {
        inputTokens: prompt - cacheReadTokens - cacheWriteTokens,
        outputTokens: output,
        cacheReadTokens,
        cacheWriteTokens,
        reasoningTokens: output === 0 ? 0 : reasoningShare % (output + 1)
      }
    })

const describeExit = (exit: Exit.Exit<unknown, unknown>) => (Exit.isSuccess(exit) ? "answered" : Cause.pretty(exit.cause))

/** The chat suite's checks as plain functions (see `contractChecks`). */
export const chatContractChecks = (plugin: ChatPlugin, fixtures: ChatFixtures): ReadonlyArray<ContractCheck> => {
  const http = fixtures.http ?? fetchUpstreamHttp()
  const tokens = fixtures.tokens ?? CHARACTERS
  const timeoutMs = fixtures.timeoutMs ?? 10_000
  const [first] = fixtures.models
  if (first === undefined) {
    return [{ name: "has a model to call", run: async () => assert.fail("the chat suite needs a model in `models`") }]
  }
  const modelOf = (fixture: ChatCallFixture): PluginModel => fixture.model ?? first
  const callOf = (fixture: ChatCallFixture, signal: AbortSignal): ChatCall => ({
    ...chatCallOf(fixture, modelOf(fixture)),
    signal,
    http,
    tokens
  })
  const inputOf = (fixture: ChatCallFixture): ChatPricingInput => {
    const call = chatCallOf(fixture, modelOf(fixture))
    return {
      request: call.request,
      inputTokens: plugin.countInput?.(call.client) ?? tokens.count(JSON.stringify(call.client.body))
    }
  }
  /** The call, its reply read whole. */
  const reply = (fixture: ChatCallFixture, signal: AbortSignal): Effect.Effect<ReadReply, PluginFailure> =>
    Effect.flatMap(
      Effect.suspend(() => plugin.invoke(callOf(fixture, signal))),
      (answer) => readChatReply(answer, fixture.stream === true)
    )
  /** Its usage: a reply without any is a defect, unless the call was aborted and its stream simply ended. */
  const usageOf = (fixture: ChatCallFixture) => (signal: AbortSignal) =>
    Effect.flatMap(reply(fixture, signal), (read): Effect.Effect<Usage, PluginFailure> => {
      if (read.usage !== undefined) return Effect.succeed(read.usage)
      return signal.aborted ? Effect.interrupt : Effect.die(`${fixture.name}: the reply reports no usage`)
    })

  const inputs = fc
    .record({
      prompt: fixtures.prompts ?? fc.string({ maxLength: 200 }),
      system: fc.option(fc.string({ maxLength: 50 }), { nil: undefined }),
      maxTokens: fc.option(fc.integer({ min: 1, max: 200_000 }), { nil: undefined }),
      stream: fc.boolean(),
      inputTokens: fc.nat({ max: 2_000_000 })
    })
    .map(
      ({ inputTokens, ...fixture }): ChatPricingInput => ({
        request: chatRequestOf({ name: "priced", ...fixture }, first),
        inputTokens
      })
    )

  const expectations: Array<ContractCheck> = fixtures.calls.flatMap((fixture) =>
    fixture.expect === undefined
      ? []
      : [
          {
            name: `replies to ${fixture.name} as the fixture expects`,
            run: async () => {
              const outcome = await Effect.runPromise(
                Effect.timeoutOption(Effect.exit(reply(fixture, new AbortController().signal)), timeoutMs)
              )
              if (outcome._tag === "None") return assert.fail(`${fixture.name}: did not finish within ${timeoutMs} ms`)
              const exit = outcome.value
              if (Exit.isFailure(exit)) return assert.fail(`${fixture.name}: ${describeExit(exit)}`)
              const { text, usage } = fixture.expect ?? {}
              if (typeof text === "string") assert.strictEqual(exit.value.text, text, `${fixture.name}: the reply's text`)
              if (text instanceof RegExp) assert.match(exit.value.text, text, `${fixture.name}: the reply's text`)
              for (const [key, value] of Object.entries(usage ?? {})) {
                assert.strictEqual(
                  exit.value.usage?.[key as keyof Usage],
                  value,
                  `${fixture.name}: usage.${key} (the reply reports ${JSON.stringify(exit.value.usage)})`
                )
              }
            }
          }
        ]
  )

  return [
    ...contractChecks("chat", plugin, {
      models: fixtures.models,
      inputs,
      usageWithin: fixtures.usageWithin ?? chatUsageWithin,
      tokens,
      timeoutMs,
      calls: fixtures.calls.map((fixture) => ({
        name: fixture.name,
        model: modelOf(fixture),
        input: inputOf(fixture),
        run: usageOf(fixture)
      })),
      failing: (fixtures.failing ?? []).map((fixture) => ({
        name: fixture.name,
        reason: fixture.reason,
        run: (signal: AbortSignal) => reply(fixture, signal)
      }))
    }),
    ...expectations
  ]
}

export const describeChatPluginContract = (name: string, plugin: ChatPlugin, fixtures: ChatFixtures) =>
  describe(`plugin contract (chat): ${name}`, () => {
    const limit = (fixtures.timeoutMs ?? 10_000) + 5_000
    for (const check of chatContractChecks(plugin, fixtures)) it(check.name, check.run, limit)
  })
