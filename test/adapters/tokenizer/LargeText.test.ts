import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { countTokens } from "gpt-tokenizer/encoding/o200k_base"
import {
  countText,
  countTextSliced,
  splitByTokens,
  truncateToTokens
} from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { finishTally, tallyOpenAIChat, countOpenAIChat } from "../../../src/adapters/tokenizer/ChatTally.ts"

const plain = { disallowedSpecial: new Set<string>() }

// Words of ordinary text (none longer than 64 characters), with the separators that make pre-tokens interesting.
const word = fc.oneof(
  fc.constantFrom("the", "Hello", "world", "écoute", "数据", "🙂", "don't", "I'M", "x=1;", "https://example.com/a?b=c"),
  fc.string({ unit: "grapheme", minLength: 1, maxLength: 12 })
)
const separator = fc.constantFrom(" ", " ", " ", "  ", "\n", "\n\n", "\t", ", ", "! ", "", " \n ")
const ordinaryText = fc
  .array(fc.tuple(word, separator), { minLength: 1, maxLength: 3000 })
  .map((parts) => parts.map(([w, s]) => w + s).join(""))

/** A deterministic string of `length` random lowercase letters: one pre-token, the costliest case for BPE. */
const letters = (length: number): string => {
  let state = 12345
  const codes = new Uint16Array(length)
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    codes[i] = 97 + ((state >>> 24) % 26)
  }
  let text = ""
  for (let i = 0; i < length; i += 8192) text += String.fromCharCode(...codes.subarray(i, i + 8192))
  return text
}

describe("chunked tokenization", () => {
  it("counts ordinary text of any length exactly as one encoding would", () => {
    fc.assert(
      fc.property(ordinaryText, (text) => countText(text) === countTokens(text, plain)),
      { numRuns: 200 }
    )
  })

  it.effect("counts the same in slices as at once", () =>
    Effect.gen(function* () {
      const samples = fc.sample(ordinaryText, { numRuns: 30, seed: 7 })
      for (const text of [...samples, letters(50_000), " ".repeat(40_000), "!\n".repeat(30_000)]) {
        assert.strictEqual(yield* countTextSliced(text), countText(text))
      }
    })
  )

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 20_000 }), fc.integer({ min: 0, max: 50 }), (text, n) => {
        countText(text)
        truncateToTokens(text, n)
        return splitByTokens(text, 3).join("") === text
      }),
      { numRuns: 100 }
    )
  })

  it("counts, truncates and splits a 1M-character run without a space in linear time (seconds, not minutes)", () => {
    // The library alone takes minutes on such a run (BPE is superlinear in a pre-token) and then throws a RangeError.
    const run = letters(1_000_000)
    const started = performance.now()
    const tokens = countText(run)
    assert.isAtLeast(tokens, 1_000_000 / 4)
    assert.isAtMost(tokens, 1_000_000)
    assert.strictEqual(countTokens(truncateToTokens(run, 24), plain) <= 24, true)
    assert.strictEqual(splitByTokens(run.slice(0, 200_000), 3).join(""), run.slice(0, 200_000))
    assert.isBelow(performance.now() - started, 10_000)
  })

  it("counts whitespace and symbol runs in linear time", () => {
    for (const text of [" ".repeat(1_000_000), "\n".repeat(1_000_000), "=".repeat(1_000_000), "!\n".repeat(500_000)]) {
      const started = performance.now()
      assert.isAbove(countText(text), 0)
      assert.isBelow(performance.now() - started, 3000)
    }
  })

  it.effect("counts a big request in slices: the event loop runs between them", () =>
    Effect.gen(function* () {
      const request = {
        messages: [
          { role: "user", content: letters(200_000) },
          { role: "user", content: "hi" }
        ]
      }
      const tally = tallyOpenAIChat(request)
      assert.isDefined(tally.deferred)
      let ticks = 0
      const timer = setInterval(() => ticks++, 1)
      const tokens = yield* finishTally(tally).pipe(Effect.ensuring(Effect.sync(() => clearInterval(timer))))
      assert.strictEqual(tokens, countOpenAIChat(request))
      assert.isAbove(ticks, 0)
      const small = tallyOpenAIChat({ messages: [{ role: "user", content: "Hello, world!" }] })
      assert.isUndefined(small.deferred)
      assert.strictEqual(small.tokens, countOpenAIChat({ messages: [{ role: "user", content: "Hello, world!" }] }))
    })
  )
})
