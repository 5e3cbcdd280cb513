/**
 * The batched JSON logger sets no timer while nothing is logged (an idle gateway must not wake for it), one timer per
 * batch when lines come, writes each batch once, and writes what is left when its scope closes.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import { makeBatchedJsonLogger, type Timers } from "../../../src/adapters/telemetry/JsonLogger.ts"

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
