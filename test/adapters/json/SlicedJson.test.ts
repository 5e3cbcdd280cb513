/**
 * The sliced JSON of huge bodies must be exactly the built-ins' JSON: parsing in slices gives what `JSON.parse` gives
 * (and fails where it fails), serializing in slices reads back as the value. Small slicing thresholds put slice
 * boundaries inside escapes, surrogate pairs and runs of backslashes, which real 1 MB slices meet only by chance.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import fc from "fast-check"
import { jsonBody, parseInSlices, type Slicing } from "../../../src/adapters/json/SlicedJson.ts"

const tiny: Slicing = { largeString: 8, slice: 5, largeText: 16 }

/** Text rich in what slicing can break: escapes (`\n`, `\"`, `\\`, `\uXXXX`), surrogate pairs, lone surrogates. */
const awkwardText = fc
  .array(
    fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 6 }),
      fc.constantFrom('"', "\\", "\\\\", "\n", "\t", "\u0000", "\u001f", "😀", "\ud800", "\udfff", "é", "\u2028"),
      fc.string({ unit: "binary", maxLength: 6 })
    ),
    { maxLength: 40 }
  )
  .map((parts) => parts.join(""))

const jsonValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    awkwardText,
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(awkwardText, tie("value"), { maxKeys: 4 })
  )
})).value

const decode = (body: string | Uint8Array) => (typeof body === "string" ? body : new TextDecoder().decode(body))

describe("SlicedJson", () => {
  it("parseInSlices gives what JSON.parse gives, for any JSON text and any slicing", () =>
    fc.assert(
      fc.property(jsonValue, fc.integer({ min: 1, max: 9 }), (value, slice) => {
        const text = JSON.stringify(value)
        const parsed = Effect.runSync(parseInSlices(text, { ...tiny, slice }))
        assert.deepStrictEqual(parsed, JSON.parse(text))
      }),
      { numRuns: 500 }
    ))

  it("parseInSlices fails where JSON.parse fails, with its message", () =>
    fc.assert(
      fc.property(jsonValue, fc.nat(), fc.constantFrom("", "}", '"', "\\", ",", "x"), (value, at, junk) => {
        const text = JSON.stringify(value)
        const cut = at % (text.length + 1)
        const broken = text.slice(0, cut) + junk + text.slice(cut + 1)
        let expected: string | undefined
        try {
          JSON.parse(broken)
        } catch (error) {
          expected = (error as Error).message
        }
        const result = Effect.runSync(Effect.result(parseInSlices(broken, tiny)))
        if (expected === undefined) assert.strictEqual(result._tag, "Success")
        else {
          assert.strictEqual(result._tag, "Failure")
          if (result._tag === "Failure") assert.strictEqual(result.failure.message, expected)
        }
      }),
      { numRuns: 500 }
    ))

  it("jsonBody reads back as the value, and is JSON.stringify's own text when no string is large", () =>
    fc.assert(
      fc.property(jsonValue, fc.integer({ min: 1, max: 9 }), (value, slice) => {
        const sliced = decode(Effect.runSync(jsonBody(value, { ...tiny, slice })))
        assert.deepStrictEqual(JSON.parse(sliced), JSON.parse(JSON.stringify(value)))
        const whole = Effect.runSync(jsonBody(value, { ...tiny, largeString: Number.MAX_SAFE_INTEGER }))
        assert.strictEqual(whole, JSON.stringify(value))
      }),
      { numRuns: 500 }
    ))

  it.effect("a 30 MB prompt with a `__proto__` key goes through both with the default slicing, timers running", () =>
    Effect.gen(function* () {
      const prompt = 'the quick brown fox \\ jumps "over" the lazy dog 😀\n'.repeat(600_000)
      // A computed key makes an own `__proto__` property (a plain `__proto__: 1` would only try to set the prototype).
      const body = { model: "m", messages: [{ role: "user", content: prompt }], ["__proto__"]: 1 }
      assert.isTrue(Object.hasOwn(body, "__proto__"))
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const bytes = yield* jsonBody(body)
      const parsed = yield* parseInSlices(decode(bytes))
      clearInterval(timer)
      assert.deepStrictEqual(parsed, JSON.parse(JSON.stringify(body)))
      assert.isTrue(Object.hasOwn(parsed as object, "__proto__"), "the key is kept as an own property")
      assert.strictEqual(Object.getPrototypeOf(parsed), Object.prototype, "and never becomes the prototype")
      assert.isAbove(ticks, 0, "the event loop ran timers while 30 MB were serialized and parsed")
    })
  )
})
