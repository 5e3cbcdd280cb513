import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { clip, QUOTE_MAX, quoted } from "../../src/domain/Quoted.ts"

describe("Quoted", () => {
  it("quotes any value in at most QUOTE_MAX characters and the mark, whole when it fits", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), (text) => {
        const shown = clip(text)
        assert.isAtMost(shown.length, QUOTE_MAX + 1)
        if (text.length <= QUOTE_MAX) assert.strictEqual(shown, text)
        else assert.strictEqual(shown, `${text.slice(0, QUOTE_MAX)}…`)
      })
    )
    fc.assert(fc.property(fc.jsonValue(), (value) => assert.isAtMost(quoted(value).length, QUOTE_MAX + 1)))
  })

  it("never sends a 300 KB value back whole", () => {
    const huge = "x".repeat(300_000)
    assert.strictEqual(clip(huge).length, QUOTE_MAX + 1)
    assert.strictEqual(quoted(huge), `"${"x".repeat(QUOTE_MAX - 1)}…`)
  })
})
