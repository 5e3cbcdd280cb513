import { assert, describe, it } from "@effect/vitest"
import { Effect, Option, References } from "effect"
import { traced } from "../../src/app/Traced.ts"

const step = Effect.fnUntraced(function* (n: number) {
  const span = yield* Effect.option(Effect.currentSpan)
  return { n: n + 1, span: Option.getOrUndefined(span)?.name }
}, traced("Test.step"))

describe("traced", () => {
  it.effect("wraps each call in a span of that name while the tracer is enabled", () =>
    Effect.gen(function* () {
      const { n, span } = yield* step(1)
      assert.strictEqual(n, 2)
      assert.strictEqual(span, "Test.step")
    })
  )

  it.effect("makes no span at all when the tracer is disabled (no OTLP endpoint)", () =>
    Effect.gen(function* () {
      const { n, span } = yield* step(1).pipe(Effect.provideService(References.TracerEnabled, false))
      assert.strictEqual(n, 2)
      assert.isUndefined(span)
    })
  )

  it.effect("keeps the parent span when disabled: the caller's trace is untouched", () =>
    Effect.gen(function* () {
      const { span } = yield* step(1).pipe(
        Effect.provideService(References.TracerEnabled, false),
        Effect.withSpan("Test.parent")
      )
      assert.strictEqual(span, "Test.parent")
    })
  )
})
