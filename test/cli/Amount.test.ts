import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import fc from "fast-check"
import { parseAmount } from "../../src/cli/Amount.ts"
import { formatMicros, MAX_MICROS } from "../../src/domain/Money.ts"

const expectProblem = (input: string, expected: string) => {
  const result = parseAmount(input)
  assert.isTrue(Result.isFailure(result), `${input} should be refused`)
  if (Result.isFailure(result)) assert.strictEqual(result.failure, expected)
}

describe("parseAmount", () => {
  it("answers the canonical micro-dollar decimal", () => {
    assert.deepStrictEqual(parseAmount("12.50"), Result.succeed("12.500000"))
    assert.deepStrictEqual(parseAmount("5"), Result.succeed("5.000000"))
    assert.deepStrictEqual(parseAmount("0.000001"), Result.succeed("0.000001"))
  })

  it("refuses more than 6 decimals, zero, negatives and non-numbers", () => {
    expectProblem("1.1234567", "at most 6 decimals (amounts are counted in micro-dollars)")
    expectProblem("0", "an amount above zero")
    expectProblem("0.000000", "an amount above zero")
    expectProblem("-5", "a decimal amount like 12.50")
    expectProblem("12,50", "a decimal amount like 12.50")
    expectProblem("1e3", "a decimal amount like 12.50")
    expectProblem("", "a decimal amount like 12.50")
    expectProblem(".5", "a decimal amount like 12.50")
  })

  it("accepts every positive micro-dollar amount and returns it unchanged", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: MAX_MICROS }), (micros) => {
        const text = formatMicros(micros)
        assert.deepStrictEqual(parseAmount(text), Result.succeed(text))
      })
    )
  })

  it("refuses any amount with a seventh decimal", () => {
    fc.assert(
      fc.property(fc.nat(1_000_000), fc.stringMatching(/^\d{7,9}$/), (whole, fraction) => {
        assert.isTrue(Result.isFailure(parseAmount(`${whole}.${fraction}`)))
      })
    )
  })
})
