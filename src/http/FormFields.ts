/**
 * Optional fields of a request body that arrives as JSON or as multipart (where every field is a string, as the
 * official SDKs send `n=2` or `temperature=0.2`). Absent, null and empty all mean "not given".
 */
import { Effect } from "effect"
import { type ApiError, badRequest } from "./ApiError.ts"

export type Fields = Readonly<Record<string, unknown>>

const isAbsent = (value: unknown) => value === undefined || value === null || value === ""

export const optionalString = (fields: Fields, name: string): Effect.Effect<string | undefined, ApiError> => {
  const value = fields[name]
  if (isAbsent(value)) return Effect.succeed(undefined)
  return typeof value === "string" ? Effect.succeed(value) : Effect.fail(badRequest(`${name}: expected a string`, name))
}

/** A boolean, or its multipart form `"true"`/`"false"`; anything else is refused rather than read as false. */
export const optionalFlag = (fields: Fields, name: string): Effect.Effect<boolean | undefined, ApiError> => {
  const value = fields[name]
  if (isAbsent(value)) return Effect.succeed(undefined)
  if (value === true || value === "true") return Effect.succeed(true)
  if (value === false || value === "false") return Effect.succeed(false)
  return Effect.fail(badRequest(`${name}: expected a boolean (true or false)`, name))
}

const optionalNumeric =
  (integer: boolean) =>
  (fields: Fields, name: string, min: number, max: number): Effect.Effect<number | undefined, ApiError> => {
    const raw = fields[name]
    if (isAbsent(raw)) return Effect.succeed(undefined)
    const value = typeof raw === "string" ? Number(raw.trim()) : raw
    return typeof value === "number" &&
      (integer ? Number.isInteger(value) : Number.isFinite(value)) &&
      value >= min &&
      value <= max
      ? Effect.succeed(value)
      : Effect.fail(badRequest(`${name}: expected ${integer ? "an integer" : "a number"} from ${min} to ${max}`, name))
  }

/** A JSON number or its string form, within `min`..`max`. */
export const optionalNumber = optionalNumeric(false)

/** An integer (JSON or its string form), within `min`..`max`. */
export const optionalInteger = optionalNumeric(true)
