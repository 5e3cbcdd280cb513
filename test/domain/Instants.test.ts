import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { EARLIEST_INSTANT_MS, LATEST_INSTANT_MS, parseDay, parseInstant } from "../../src/domain/Instants.ts"

describe("parseInstant", () => {
  it("reads every instant in years 1 to 9999 back from its ISO text", () => {
    fc.assert(
      fc.property(fc.integer({ min: EARLIEST_INSTANT_MS, max: LATEST_INSTANT_MS }), (millis) => {
        assert.strictEqual(parseInstant(new Date(millis).toISOString()), millis)
      })
    )
  })

  it("refuses days that are not on the calendar, times out of range, year 0 and instants that need a zone", () => {
    for (const text of [
      "2026-02-30T00:00:00Z",
      "2025-02-29T00:00:00Z",
      "2026-04-31T00:00:00Z",
      "2026-13-01T00:00:00Z",
      "2026-00-10T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T23:60:00Z",
      "2026-01-01T23:59:60Z",
      "0000-01-01T00:00:00Z",
      "0001-01-01T00:30:00+01:00",
      "9999-12-31T23:59:59-01:00",
      "2026-01-01T00:00:00",
      "2026-01-01",
      "tomorrow"
    ]) {
      assert.isUndefined(parseInstant(text), text)
    }
    assert.isDefined(parseInstant("2024-02-29T12:00:00+05:30"))
    assert.isDefined(parseInstant("2026-12-31T23:59Z"))
  })
})

describe("parseDay", () => {
  it("accepts calendar days only", () => {
    assert.strictEqual(parseDay("2024-02-29"), "2024-02-29")
    for (const text of ["2026-02-30", "2100-02-29", "0000-01-01", "2026-1-1", "2026-01-01T00:00:00Z"]) {
      assert.isUndefined(parseDay(text), text)
    }
  })
})
