/**
 * Money is an integer count of micro-dollars (1 USD = 1_000_000). Decimal strings with at most six fractional
 * digits are the only outside representation, so no amount ever passes through a float.
 */
export type Micros = bigint

export const MICROS_PER_UNIT = 1_000_000n

const DECIMAL = /^(0|[1-9][0-9]{0,14})(?:\.([0-9]{1,6}))?$/

/** The largest amount the store's `bigint` columns hold (2^63 − 1 micro-dollars, about 9.2 trillion USD). */
export const MAX_MICROS: Micros = 9_223_372_036_854_775_807n

/** Parses a non-negative decimal string ("12.5", "0.000001"); undefined when it is not one or does not fit. */
export const parseDecimal = (text: string): Micros | undefined => {
  const match = DECIMAL.exec(text)
  if (match === null) return undefined
  const fraction = (match[2] ?? "").padEnd(6, "0")
  const value = BigInt(match[1]) * MICROS_PER_UNIT + BigInt(fraction)
  return value > MAX_MICROS ? undefined : value
}

/** Formats micro-dollars with exactly six decimals ("12.500000"); negative amounts carry a leading "-". */
export const formatMicros = (amount: Micros): string => {
  const negative = amount < 0n
  const abs = negative ? -amount : amount
  const whole = abs / MICROS_PER_UNIT
  const fraction = (abs % MICROS_PER_UNIT).toString().padStart(6, "0")
  return `${negative ? "-" : ""}${whole}.${fraction}`
}

/** Formats a signed delta with an explicit sign ("+1.000000", "-0.250000", "0.000000"). */
export const formatSignedMicros = (amount: Micros): string =>
  amount > 0n ? `+${formatMicros(amount)}` : formatMicros(amount)

/** Ceiling division for non-negative operands: holds round up so an estimate never under-reserves. */
export const ceilDiv = (numerator: bigint, denominator: bigint): bigint =>
  numerator === 0n ? 0n : (numerator + denominator - 1n) / denominator

export const min = (a: Micros, b: Micros): Micros => (a < b ? a : b)
export const max = (a: Micros, b: Micros): Micros => (a > b ? a : b)

/**
 * The cost of `units` at a price quoted per million units, rounded up to the next micro-dollar so a charge never
 * undercounts.
 */
export const costPerMillion = (units: bigint, pricePerMillion: Micros): Micros =>
  ceilDiv(units * pricePerMillion, 1_000_000n)
