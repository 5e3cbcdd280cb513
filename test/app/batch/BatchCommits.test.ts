import { assert, describe, it } from "@effect/vitest"
import { storable } from "../../../src/app/batch/BatchCommits.ts"
import { isStorableText } from "../../../src/domain/StorableText.ts"

const strings = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string"
    ? [value]
    : Array.isArray(value)
      ? value.flatMap(strings)
      : typeof value === "object" && value !== null
        ? Object.entries(value).flatMap(([key, item]) => [key, ...strings(item)])
        : []

describe("a line's result made storable", () => {
  it("replaces NUL and unpaired surrogates in every string and key, and keeps the rest as it was", () => {
    const body = {
      choices: [{ message: { content: "a\u0000b", refusal: null }, index: 0 }],
      "k\u0000": ["\ud800x", 1, true],
      usage: { prompt_tokens: 3 }
    }
    assert.isFalse(strings(body).every(isStorableText))
    const made = storable(body)
    assert.isTrue(strings(made).every(isStorableText))
    assert.deepStrictEqual(made, {
      choices: [{ message: { content: "a\ufffdb", refusal: null }, index: 0 }],
      "k\ufffd": ["\ufffdx", 1, true],
      usage: { prompt_tokens: 3 }
    })
  })
})
