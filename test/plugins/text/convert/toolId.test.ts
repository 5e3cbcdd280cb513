import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { restoreToolId, sanitizeToolId } from "../../../../src/plugins/text/convert/toolId.ts"

describe("sanitizeToolId", () => {
  it("given Anthropic-valid ids, when sanitized, then they are unchanged", () => {
    assert.strictEqual(sanitizeToolId("toolu_01XyZ"), "toolu_01XyZ")
    assert.strictEqual(sanitizeToolId("call_a1-b"), "call_a1-b")
  })

  it("given vendor ids with other characters, when sanitized, then they match the pattern and restore", () => {
    for (const id of ["functions.get_weather:0", "call|1", "", "gwx_taken", "ünï côdé", "a b"]) {
      const safe = sanitizeToolId(id)
      assert.match(safe, /^[a-zA-Z0-9_-]+$/)
      assert.strictEqual(restoreToolId(safe), id)
    }
  })

  it("property: sanitize is deterministic, valid, injective and reversible", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.string({ unit: "grapheme" }), (a, b) => {
        const sa = sanitizeToolId(a)
        assert.match(sa, /^[a-zA-Z0-9_-]+$/)
        assert.strictEqual(sanitizeToolId(a), sa)
        assert.strictEqual(restoreToolId(sa), a)
        if (a !== b) assert.notStrictEqual(sa, sanitizeToolId(b))
      }),
      { numRuns: 500 }
    )
  })
})
