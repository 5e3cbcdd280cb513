/**
 * The batched JSON logger sets no timer while nothing is logged (an idle gateway must not wake for it), one timer per
 * batch when lines come, writes each batch once, and writes what is left when its scope closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Effect, Logger } from "effect"
import fc from "fast-check"
import { jsonLine, makeBatchedJsonLogger, type Timers } from "../../../src/adapters/telemetry/JsonLogger.ts"

describe("a log line", () => {
  /** What `jsonLine` and Effect's own JSON logger write for the same entry. */
  const bothLines = (log: Effect.Effect<void>) => {
    const lines: Array<readonly [string, string]> = []
    const both = Logger.make((options) => {
      lines.push([jsonLine(options), Logger.formatJson.log(options)])
    })
    Effect.runSync(log.pipe(Effect.provide(Logger.layer([both]))))
    return lines
  }
  const value = fc.oneof(
    fc.constantFrom(null, true, false, 0, -0, Number.NaN, Number.POSITIVE_INFINITY, "", 'é\u0000"', "__proto__"),
    fc.string(),
    fc.double(),
    fc.bigInt(),
    fc.date({ noInvalidDate: true }),
    fc.anything({ withBigInt: true, withDate: true, withMap: true, withSet: true, withTypedArray: true }),
    fc.string().map((message) => new Error(message))
  )

  it("property: is Effect's JSON logger's line, whatever the message and annotations", () => {
    fc.assert(
      fc.property(
        fc.oneof(value, fc.array(value, { maxLength: 3 })),
        fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 6 }),
        fc.boolean(),
        (message, annotations, failed) => {
          const log = (failed ? Effect.logError(message, Cause.fail("boom")) : Effect.logInfo(message)).pipe(
            Effect.annotateLogs(annotations),
            Effect.withLogSpan("span")
          )
          for (const [ours, effects] of bothLines(log)) assert.strictEqual(ours, effects)
        }
      ),
      { numRuns: 300 }
    )
  })

  it("an access line (plain values only) is the same text", () => {
    const log = Effect.logInfo("request").pipe(
      Effect.annotateLogs({ requestId: "req_1", status: 200, keyId: null, cost: "0.000012", durationMs: 1.25 })
    )
    const [[ours, effects]] = bothLines(log) as [readonly [string, string]]
    assert.strictEqual(ours, effects)
    assert.strictEqual(JSON.parse(ours).annotations.status, 200)
  })
})

describe("batched JSON logger", () => {
  it.live("no timer while idle, one per batch, every line written once", () =>
    Effect.gen(function* () {
      const written: Array<string> = []
      let set = 0
      let pending = 0
      const counted: Timers = {
        set: (run, ms) => {
          set++
          pending++
          return setTimeout(() => {
            pending--
            run()
          }, ms)
        },
        clear: (timer) => {
          pending--
          clearTimeout(timer as ReturnType<typeof setTimeout>)
        }
      }
      const messages = (batch: string | undefined) =>
        (batch ?? "")
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line).message)
      yield* Effect.gen(function* () {
        yield* Effect.sleep("60 millis")
        assert.strictEqual(set, 0, "an idle logger sets no timer")
        yield* Effect.logInfo("one")
        yield* Effect.logInfo("two")
        assert.strictEqual(set, 1, "one timer for the batch")
        assert.deepStrictEqual(written, [])
        yield* Effect.sleep("60 millis")
        assert.deepStrictEqual(written.map(messages), [["one", "two"]])
        assert.strictEqual(pending, 0)
        yield* Effect.sleep("60 millis")
        assert.strictEqual(set, 1, "idle again: no timer")
        yield* Effect.logInfo("last")
      }).pipe(Effect.provide(Logger.layer([makeBatchedJsonLogger((text) => written.push(text), 20, counted)])))
      // The scope closed: what was buffered is written, its timer cleared.
      assert.deepStrictEqual(written.map(messages), [["one", "two"], ["last"]])
      assert.strictEqual(pending, 0)
    })
  )
})
