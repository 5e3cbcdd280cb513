import { assert, describe, it } from "@effect/vitest"
import { DateTime, Result } from "effect"
import { parseInstant } from "../../src/cli/Params.ts"

const iso = (input: string) => Result.map(parseInstant(input), DateTime.formatIso)

describe("parseInstant", () => {
  it("reads a date as midnight UTC and a date-time in its own zone", () => {
    assert.deepStrictEqual(iso("2027-01-31"), Result.succeed("2027-01-31T00:00:00.000Z"))
    assert.deepStrictEqual(iso("2027-01-31T12:30:00Z"), Result.succeed("2027-01-31T12:30:00.000Z"))
    assert.deepStrictEqual(iso("2027-01-31T12:30:00+02:00"), Result.succeed("2027-01-31T10:30:00.000Z"))
    assert.deepStrictEqual(iso("2028-02-29"), Result.succeed("2028-02-29T00:00:00.000Z"))
  })

  it("refuses days that do not exist instead of rolling them over", () => {
    assert.deepStrictEqual(iso("2027-02-29"), Result.fail("a date that exists on the calendar"))
    assert.deepStrictEqual(iso("2027-04-31"), Result.fail("a date that exists on the calendar"))
    assert.deepStrictEqual(iso("2027-13-01"), Result.fail("a date that exists on the calendar"))
    assert.deepStrictEqual(iso("2027-01-01T24:00:00Z"), Result.fail("a date that exists on the calendar"))
  })

  it("refuses a time without a zone, which would silently mean the machine's local time", () => {
    assert.isTrue(Result.isFailure(iso("2027-01-31T12:00:00")))
    assert.isTrue(Result.isFailure(iso("tomorrow")))
  })
})
