import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { jsonProblem, MAX_JSON_DEPTH, MAX_PARAMETER_CHARS, parameterProblem } from "../../src/http/InputLimits.ts"
import { isStorableText, storableTextProblem } from "../../src/domain/StorableText.ts"

/** `{"a":[{"a":[…1…]}]}` with `levels` containers in all. */
const nested = (levels: number): unknown => {
  let value: unknown = 1
  for (let level = 0; level < levels; level++) value = level % 2 === 0 ? [value] : { a: value }
  return value
}

/** Text Postgres stores: no NUL, no unpaired surrogate. */
const storableString = fc.string({ unit: "grapheme", maxLength: 12 }).filter(isStorableText)
const badText = fc.oneof(
  fc.tuple(storableString, storableString).map(([a, b]) => `${a}\u0000${b}`),
  fc
    .tuple(storableString, fc.integer({ min: 0xd800, max: 0xdbff }))
    .map(([a, high]) => `${a}${String.fromCharCode(high)}`),
  fc
    .tuple(fc.integer({ min: 0xdc00, max: 0xdfff }), storableString)
    .map(([low, b]) => `${String.fromCharCode(low)}${b}`)
)
const storableJson = fc.jsonValue({ maxDepth: 6 }).filter((value) => {
  const text = JSON.stringify(value)
  return !text.includes("\\u0000") && !/\\ud[89ab]|\\ud[c-f]/i.test(text) && isStorableText(text)
})

/** Every path to a value inside `root`, as segments. */
const paths = (root: unknown, at: ReadonlyArray<string | number> = []): Array<Array<string | number>> => {
  if (Array.isArray(root)) return root.flatMap((child, index) => [[...at, index], ...paths(child, [...at, index])])
  if (typeof root === "object" && root !== null) {
    return Object.entries(root).flatMap(([key, child]) => [[...at, key], ...paths(child, [...at, key])])
  }
  return []
}

const setAt = (root: unknown, path: ReadonlyArray<string | number>, value: unknown): unknown => {
  if (path.length === 0) return value
  const [head, ...rest] = path
  if (Array.isArray(root)) return root.map((child, index) => (index === head ? setAt(child, rest, value) : child))
  return { ...(root as Record<string, unknown>), [head]: setAt((root as Record<string, unknown>)[head], rest, value) }
}

const formatted = (path: ReadonlyArray<string | number>) =>
  path.reduce<string>(
    (text, segment) =>
      typeof segment === "number" ? `${text}[${segment}]` : text === "" ? segment : `${text}.${segment}`,
    ""
  )

describe("storable text", () => {
  it("names the NUL and both halves of a lone surrogate, and passes paired surrogates", () => {
    assert.include(storableTextProblem("a\u0000b"), "NUL")
    assert.include(storableTextProblem("a\ud800"), "surrogate")
    assert.include(storableTextProblem("\udc00b"), "surrogate")
    assert.include(storableTextProblem("\udc00\ud800"), "surrogate")
    assert.isUndefined(storableTextProblem("emoji 😀 and ✓"))
  })
})

describe("jsonProblem", () => {
  it("passes every storable JSON value within the depth limit, stored or forwarded", () => {
    fc.assert(
      fc.property(storableJson, (value) => {
        assert.isUndefined(jsonProblem(value, { storable: true }))
        assert.isUndefined(jsonProblem(value, { storable: false }))
      })
    )
  })

  it("finds a bad string wherever it sits in a stored value and names its path; a forwarded value passes", () => {
    fc.assert(
      fc.property(
        storableJson.filter((value) => paths(value).length > 0),
        fc.nat(),
        badText,
        (value, pick, bad) => {
          const all = paths(value)
          const path = all[pick % all.length]
          const poisoned = setAt(value, path, bad)
          const problem = jsonProblem(poisoned, { storable: true })
          assert.isDefined(problem)
          assert.strictEqual(problem?.path, formatted(path))
          assert.strictEqual(problem?.code, "invalid_text")
          assert.isUndefined(jsonProblem(poisoned, { storable: false }))
        }
      )
    )
  })

  it("finds a bad key and names it", () => {
    const problem = jsonProblem({ metadata: { "bad\u0000key": 1 } }, { storable: true })
    assert.strictEqual(problem?.path, "metadata.bad\u0000key")
    assert.include(problem?.message, "key")
  })

  it("accepts nesting up to the limit and refuses one level more, in every mode", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: MAX_JSON_DEPTH }), fc.boolean(), (levels, storable) => {
        assert.isUndefined(jsonProblem(nested(levels), { storable }))
      })
    )
    for (const storable of [true, false]) {
      const problem = jsonProblem(nested(MAX_JSON_DEPTH + 1), { storable })
      assert.strictEqual(problem?.code, "nesting_too_deep")
      assert.include(problem?.message, String(MAX_JSON_DEPTH))
      assert.isAtMost(problem?.path.length ?? 0, 200)
    }
  })

  it("counts the prefix of a value parsed from a field", () => {
    assert.isUndefined(jsonProblem(nested(MAX_JSON_DEPTH - 1), { storable: true, prefix: ["metadata"] }))
    assert.strictEqual(
      jsonProblem(nested(MAX_JSON_DEPTH), { storable: true, prefix: ["metadata"] })?.code,
      "nesting_too_deep"
    )
    assert.strictEqual(
      jsonProblem({ images: ["a\u0000"] }, { storable: true, prefix: ["metadata"] })?.path,
      "metadata.images[0]"
    )
  })

  it("walks a value nested 100,000 deep without overflowing the stack", () => {
    const deep = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`)
    assert.strictEqual(jsonProblem(deep, { storable: false })?.code, "nesting_too_deep")
  })
})

describe("parameterProblem", () => {
  it("refuses bad text and values over the length limit", () => {
    fc.assert(fc.property(badText, (bad) => assert.isDefined(parameterProblem(bad))))
    assert.isUndefined(parameterProblem("x".repeat(MAX_PARAMETER_CHARS)))
    assert.include(parameterProblem("x".repeat(MAX_PARAMETER_CHARS + 1)), String(MAX_PARAMETER_CHARS))
  })
})
