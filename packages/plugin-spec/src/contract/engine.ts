/**
 * The checks every kind's contract suite shares: the plugin's shape, its pricing rule's properties (fast-check), each
 * fixture call answered with usage its estimate covers, an aborted call that stops or fails cleanly (never answers,
 * hangs or dies), and failing fixtures that fail with the reason they name — never a thrown error or a defect.
 *
 * `contractChecks` gives the checks as plain functions (each rejects with the reason it failed), which is how the
 * spec's own tests plant a bug per check; `describeContract` registers them as vitest tests.
 */
import { Cause, Effect, Exit, Option } from "effect"
import fc from "fast-check"
import { assert, describe, it } from "vitest"
import type { FailureReason, Micros, PluginFailure, PluginModel, PricingRule, TokenCounter } from "../common.ts"
import { FAILURE_REASONS, pluginShapeProblems } from "../shape.ts"

export const isPluginFailure = (error: unknown): error is PluginFailure => {
  const failure = error as Partial<PluginFailure> | null
  return (
    typeof failure === "object" &&
    failure !== null &&
    failure._tag === "PluginFailure" &&
    typeof failure.reason === "string" &&
    (FAILURE_REASONS as ReadonlyArray<string>).includes(failure.reason) &&
    typeof failure.message === "string"
  )
}

/** One call a suite makes: what it was estimated for, and how to run it (returning the usage its reply reports). */
export interface ContractCall<In, U> {
  readonly name: string
  readonly model: PluginModel
  readonly input: In
  readonly run: (signal: AbortSignal) => Effect.Effect<U, PluginFailure>
}

/** A call that must fail, and the reason it must fail with (a refusing upstream is `unavailable`, a 400 `invalid_request`). */
export interface FailingCall {
  readonly name: string
  readonly reason: FailureReason
  readonly run: (signal: AbortSignal) => Effect.Effect<unknown, PluginFailure>
}

export interface ContractFixtures<In, U> {
  readonly models: ReadonlyArray<PluginModel>
  /** Inputs to price: any the plugin may be asked to estimate. */
  readonly inputs: fc.Arbitrary<In>
  /** Usages the hold for `input` covers: `price(usage) ≤ estimate(input)` must hold for each. */
  readonly usageWithin: (input: In, model: PluginModel) => fc.Arbitrary<U>
  readonly calls: ReadonlyArray<ContractCall<In, U>>
  /** Calls that must fail with a PluginFailure of the reason each names, never a defect. */
  readonly failing?: ReadonlyArray<FailingCall>
  /** How long one call may take. */
  readonly timeoutMs?: number
  /** The token counter pricing is given, as the gateway gives its own (`o200k_base`). */
  readonly tokens?: TokenCounter
}

/** One check of a suite: `run` rejects with what is wrong. */
export interface ContractCheck {
  readonly name: string
  readonly run: () => Promise<void>
}

const isMicros = (value: unknown): value is Micros => typeof value === "bigint" && value >= 0n

/** Runs `effect` with a time limit: `None` when it did not finish in time (a hang), its exit otherwise. */
const exitOf = <A>(effect: Effect.Effect<A, PluginFailure>, timeoutMs: number) =>
  Effect.runPromise(Effect.timeoutOption(Effect.exit(Effect.suspend(() => effect)), timeoutMs))

const finished = <A>(outcome: Option.Option<Exit.Exit<A, PluginFailure>>, what: string, timeoutMs: number) => {
  if (Option.isNone(outcome)) assert.fail(`${what}: did not finish within ${timeoutMs} ms`)
  return outcome.value
}

/** The PluginFailure an exit failed with; any other failure, a defect or a success fails the check. */
const failureOf = (exit: Exit.Exit<unknown, unknown>, what: string): PluginFailure => {
  if (Exit.isSuccess(exit)) return assert.fail(`${what}: expected a PluginFailure, but the call answered`)
  const failure = Cause.findErrorOption(exit.cause)
  if (Option.isSome(failure) && isPluginFailure(failure.value)) return failure.value
  return assert.fail(`${what}: expected a PluginFailure with a known reason, got ${Cause.pretty(exit.cause)}`)
}

export const contractChecks = <In, U>(
  kind: string,
  plugin: { readonly kind: string; readonly pricing: PricingRule<In, U> } & object,
  fixtures: ContractFixtures<In, U>
): ReadonlyArray<ContractCheck> => {
  const timeoutMs = fixtures.timeoutMs ?? 10_000
  const checks: Array<ContractCheck> = [
    {
      name: "has the shape the gateway accepts",
      run: async () => {
        assert.deepStrictEqual(pluginShapeProblems(plugin), [])
        assert.strictEqual(plugin.kind, kind)
      }
    },
    {
      name: "prices purely, in non-negative bigint micro-dollars, never more than the estimate for covered usage",
      run: async () => {
        for (const model of fixtures.models) {
          fc.assert(
            fc.property(
              fixtures.inputs.chain((input) =>
                fixtures.usageWithin(input, model).map((usage) => [input, usage] as const)
              ),
              ([input, usage]) => {
                const estimate = plugin.pricing.estimate(input, model, fixtures.tokens)
                const price = plugin.pricing.price(usage, model, fixtures.tokens)
                assert.isTrue(isMicros(estimate), `estimate is not non-negative bigint micro-dollars: ${String(estimate)}`)
                assert.isTrue(isMicros(price), `price is not non-negative bigint micro-dollars: ${String(price)}`)
                assert.strictEqual(plugin.pricing.estimate(input, model, fixtures.tokens), estimate, "estimate is not pure")
                assert.strictEqual(plugin.pricing.price(usage, model, fixtures.tokens), price, "price is not pure")
                assert.isTrue(price <= estimate, `price ${price} is above the estimate ${estimate} it was held for`)
              }
            ),
            { numRuns: 200 }
          )
        }
      }
    }
  ]

  for (const call of fixtures.calls) {
    checks.push({
      name: `answers ${call.name} with usage its estimate covers`,
      run: async () => {
        const exit = finished(await exitOf(call.run(new AbortController().signal), timeoutMs), call.name, timeoutMs)
        if (Exit.isFailure(exit)) assert.fail(`${call.name} failed: ${Cause.pretty(exit.cause)}`)
        const price = plugin.pricing.price(exit.value, call.model, fixtures.tokens)
        const estimate = plugin.pricing.estimate(call.input, call.model, fixtures.tokens)
        assert.isTrue(isMicros(price), "the reply's price is not non-negative bigint micro-dollars")
        assert.isTrue(price <= estimate, `the reply costs ${price}, more than the ${estimate} held for it`)
      }
    })
    checks.push({
      name: `stops ${call.name}, or fails it cleanly, when the signal is already aborted`,
      run: async () => {
        const controller = new AbortController()
        controller.abort()
        const what = `${call.name} (aborted)`
        const exit = finished(await exitOf(call.run(controller.signal), timeoutMs), what, timeoutMs)
        if (Exit.isSuccess(exit)) {
          assert.fail(`${what}: answered although its signal was aborted before the call (give call.signal to the upstream request)`)
        }
        if (Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)) return
        failureOf(exit, what)
      }
    })
  }

  for (const failing of fixtures.failing ?? []) {
    checks.push({
      name: `fails ${failing.name} with reason ${failing.reason}, never a defect`,
      run: async () => {
        const exit = finished(await exitOf(failing.run(new AbortController().signal), timeoutMs), failing.name, timeoutMs)
        const failure = failureOf(exit, failing.name)
        assert.strictEqual(
          failure.reason,
          failing.reason,
          `${failing.name}: failed with reason ${failure.reason} (${failure.message}${failure.detail === undefined ? "" : `; ${failure.detail}`})`
        )
      }
    })
  }
  return checks
}

export const describeContract = <In, U>(
  kind: string,
  name: string,
  plugin: { readonly kind: string; readonly pricing: PricingRule<In, U> } & object,
  fixtures: ContractFixtures<In, U>
) =>
  describe(`plugin contract (${kind}): ${name}`, () => {
    // Past the call's own limit, so a hang is reported as one rather than as vitest's timeout.
    const limit = (fixtures.timeoutMs ?? 10_000) + 5_000
    for (const check of contractChecks(kind, plugin, fixtures)) it(check.name, check.run, limit)
  })
