/** Schemas shared by the public and admin APIs. */
import { Schema } from "effect"
import { parseInstant } from "../domain/Instants.ts"
import { formatMicros, MAX_MICROS, parseDecimal } from "../domain/Money.ts"
import { storableTextProblem } from "../domain/StorableText.ts"

const decimalProblem = (text: string): string | undefined => {
  if (parseDecimal(text) !== undefined) return undefined
  if (/^-/.test(text.trim())) return "must not be negative"
  if (/^\d+\.\d{7,}$/.test(text)) return "has more than 6 decimal places"
  if (/^\d+(\.\d{1,6})?$/.test(text))
    return `must be at most ${formatMicros(MAX_MICROS)}, the largest balance the ledger holds`
  return 'expected a decimal string such as "12.50"'
}

/** A non-negative USD amount as a decimal string with at most 6 decimals ("12.50"). */
export const DecimalAmount = Schema.String.annotate({ message: 'expected a decimal string such as "12.50"' }).check(
  Schema.makeFilter((text: string) => decimalProblem(text))
)

export const PositiveDecimalAmount = DecimalAmount.check(
  Schema.makeFilter((text: string) => (parseDecimal(text) === 0n ? "must be greater than zero" : undefined))
)

export const Name = Schema.String.annotate({ message: "expected a string" }).check(
  Schema.makeFilter((text: string) =>
    text.trim().length === 0
      ? "must not be empty"
      : text.length > 200
        ? "must be at most 200 characters"
        : storableTextProblem(text)
  )
)

/** An ISO 8601 instant with a time zone ("2026-12-31T23:59:59Z"), on the calendar, in years 1 to 9999. */
export const IsoInstant = Schema.String.annotate({ message: "expected an ISO 8601 instant" }).check(
  Schema.makeFilter((text: string) =>
    parseInstant(text) !== undefined
      ? undefined
      : 'expected an ISO 8601 instant with a zone, such as "2026-12-31T23:59:59Z", on a day that exists'
  )
)

/** The most model ids one key may be limited to. */
export const MAX_KEY_MODELS = 256

/** A key's model allow-list: names, at most `MAX_KEY_MODELS` of them. */
export const ModelList = Schema.Array(Name).check(
  Schema.makeFilter((models: ReadonlyArray<string>) =>
    models.length > MAX_KEY_MODELS ? `at most ${MAX_KEY_MODELS} models, got ${models.length}` : undefined
  )
)
