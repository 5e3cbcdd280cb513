/**
 * The checks every kind's contract suite shares, as vitest tests: the plugin's shape, its pricing rule's properties
 * (fast-check), each fixture call answered with usage its estimate covers, an aborted call that fails cleanly, and
 * failures that are `PluginFailure`s with a known reason — never a thrown error or a defect.
 */
import { Cause, Effect, Exit } from "effect"
import fc from "fast-check"
import { assert, describe, it } from "vitest"
import type { FailureReason, Micros, PluginFailure, PluginModel, PricingRule } from "../common.ts"
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

export interface ContractFixtures<In, U> {
  readonly models: ReadonlyArray<PluginModel>
  /** Inputs to price: any the plugin may be asked to estimate. */
  readonly inputs: fc.Arbitrary<In>
  /** Usages the hold for `input` covers: `price(usage) ≤ estimate(input)` must hold for each. */
  readonly usageWithin: (input: In, model: PluginModel) => fc.Arbitrary<U>
  readonly calls: ReadonlyArray<ContractCall<In, U>>
  /** Calls that must fail (a refusing upstream, an inexpressible request): with a PluginFailure, never a defect. */
  readonly failing?: ReadonlyArray<{ readonly name: string; readonly run: (signal: AbortSignal) => Effect.Effect<unknown, PluginFailure> }>
  /** How long one call may take. */
  readonly timeoutMs?: number
}

const isMicros = (value: unknown): value is Micros => typeof value === "bigint" && value >= 0n

/** Runs `effect` with a time limit; a defect or a timeout is reported as such, never swallowed. */
const exitOf = <A>(effect: Effect.Effect<A, PluginFailure>, timeoutMs: number) =>
  Effect.runPromise(Effect.exit(effect.pipe(Effect.timeout(timeoutMs))))

const assertCleanFailure = (exit: Exit.Exit<unknown, unknown>, what: string) => {
  if (Exit.isSuccess(exit)) return
  const failure = Cause.findErrorOption(exit.cause)
  assert.isTrue(
    failure._tag === "Some" && isPluginFailure(failure.value),
    `${what}: expected a PluginFailure with a known reason, got ${Cause.pretty(exit.cause)}`
  )
}

export const describeContract = <In, U>(
  kind: string,
  name: string,
  plugin: { readonly kind: string; readonly pricing: PricingRule<In, U> } & object,
  fixtures: ContractFixtures<In, U>
) =>
  describe(`plugin contract (${kind}): ${name}`, () => {
    const timeoutMs = fixtures.timeoutMs ?? 10_000

    it("has the shape the gateway accepts", () => {
      assert.deepStrictEqual(pluginShapeProblems(plugin), [])
      assert.strictEqual(plugin.kind, kind)
    })

    it("prices purely, in non-negative bigint micro-dollars, never more than the estimate for covered usage", () => {
      for (const model of fixtures.models) {
        fc.assert(
          fc.property(
            fixtures.inputs.chain((input) => fixtures.usageWithin(input, model).map((usage) => [input, usage] as const)),
            ([input, usage]) => {
              const estimate = plugin.pricing.estimate(input, model)
              const price = plugin.pricing.price(usage, model)
              assert.isTrue(isMicros(estimate), `estimate is not non-negative bigint micro-dollars: ${String(estimate)}`)
              assert.isTrue(isMicros(price), `price is not non-negative bigint micro-dollars: ${String(price)}`)
              assert.strictEqual(plugin.pricing.estimate(input, model), estimate, "estimate is not pure")
              assert.strictEqual(plugin.pricing.price(usage, model), price, "price is not pure")
              assert.isTrue(price <= estimate, `price ${price} is above the estimate ${estimate} it was held for`)
            }
          ),
          { numRuns: 200 }
        )
      }
    })

    for (const call of fixtures.calls) {
      it(`answers ${call.name} with usage its estimate covers`, async () => {
        const exit = await exitOf(call.run(new AbortController().signal), timeoutMs)
        if (Exit.isFailure(exit)) assert.fail(`${call.name} failed: ${Cause.pretty(exit.cause)}`)
        const price = plugin.pricing.price(exit.value, call.model)
        const estimate = plugin.pricing.estimate(call.input, call.model)
        assert.isTrue(isMicros(price), "the reply's price is not non-negative bigint micro-dollars")
        assert.isTrue(price <= estimate, `the reply costs ${price}, more than the ${estimate} held for it`)
      })

      it(`fails ${call.name} cleanly, or stops, when the signal is already aborted`, async () => {
        const controller = new AbortController()
        controller.abort()
        assertCleanFailure(await exitOf(call.run(controller.signal), timeoutMs), `${call.name} (aborted)`)
      })
    }

    for (const failing of fixtures.failing ?? []) {
      it(`fails ${failing.name} with a PluginFailure, never a defect`, async () => {
        const exit = await exitOf(failing.run(new AbortController().signal), timeoutMs)
        assert.isTrue(Exit.isFailure(exit), `${failing.name} was expected to fail`)
        assertCleanFailure(exit, failing.name)
      })
    }
  })
