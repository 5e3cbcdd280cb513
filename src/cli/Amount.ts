/**
 * Money typed on the command line, checked with the ledger's own rules (`domain/Money`) so a typo never reaches the
 * server: a positive decimal with at most 6 decimals, sent on in canonical form ("12.5" → "12.500000").
 */
import { Result } from "effect"
import { formatMicros, parseDecimal } from "../domain/Money.ts"

export const maxDecimals = 6

/**
 * Parses `12.50`-style input into its canonical decimal string, or says what was expected (the CLI prints it after
 * "Expected:").
 */
export const parseAmount = (input: string): Result.Result<string, string> => {
  const micros = parseDecimal(input)
  if (micros === undefined) {
    return /^\d+\.\d{7,}$/.test(input)
      ? Result.fail(`at most ${maxDecimals} decimals (amounts are counted in micro-dollars)`)
      : Result.fail("a decimal amount like 12.50")
  }
  if (micros <= 0n) return Result.fail("an amount above zero")
  return Result.succeed(formatMicros(micros))
}
