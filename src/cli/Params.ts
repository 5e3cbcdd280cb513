/**
 * Command-line values checked while parsing, so a bad one is a usage error (exit 2) before any request is sent.
 */
import { Clock, DateTime, Effect, Option, Result } from "effect"
import { Argument, CliError, Flag } from "effect/cli"
import { parseAmount } from "./Amount.ts"

const problem = (result: Result.Result<unknown, string>) => (Result.isFailure(result) ? result.failure : "")

export const amountArgument = (name: string) =>
  Argument.String(name).pipe(
    Argument.withMetavar("amount"),
    Argument.filterMap(
      (input) => Result.getSuccess(parseAmount(input)),
      (input) => problem(parseAmount(input))
    )
  )

export const amountFlag = (name: string) =>
  Flag.String(name).pipe(
    Flag.withMetavar("amount"),
    Flag.filterMap(
      (input) => Result.getSuccess(parseAmount(input)),
      (input) => problem(parseAmount(input))
    )
  )

const isoTime = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2}))?$/i

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
const daysInMonth = (year: number, month: number) =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

// Date parsing rolls 2027-02-30 over to March 2 instead of refusing it.
const existsOnCalendar = (match: RegExpExecArray) => {
  const [year, month, day, hour = 0, minute = 0, second = 0] = match.slice(1).map((part) => Number(part ?? 0))
  return (
    month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month) && hour < 24 && minute < 60 && second < 60
  )
}

/** A date (`2027-01-31`, midnight UTC) or a date-time with a zone (`2027-01-31T12:00:00Z`). */
export const parseInstant = (input: string): Result.Result<DateTime.DateTime, string> => {
  const match = isoTime.exec(input)
  if (match === null) {
    return Result.fail("an ISO date like 2027-01-31, or a date-time with a zone like 2027-01-31T12:00:00Z")
  }
  if (!existsOnCalendar(match)) return Result.fail("a date that exists on the calendar")
  return Option.match(DateTime.make(input), {
    onNone: () => Result.fail("a date that exists on the calendar"),
    onSome: (instant) => Result.succeed<DateTime.DateTime>(instant)
  })
}

/** A future instant, sent as UTC ISO; the past is refused here because a key that is born expired is a typo. */
export const futureInstantFlag = (name: string) =>
  Flag.String(name).pipe(
    Flag.withMetavar("ISO-date"),
    Flag.mapEffect((input) =>
      Effect.gen(function* () {
        const invalid = (expected: string) =>
          new CliError.InvalidValue({ option: name, value: input, expected, kind: "flag" })
        const parsed = parseInstant(input)
        if (Result.isFailure(parsed)) return yield* invalid(parsed.failure)
        if (DateTime.toEpochMillis(parsed.success) <= (yield* Clock.currentTimeMillis)) {
          return yield* invalid("a time in the future")
        }
        return DateTime.formatIso(parsed.success)
      })
    )
  )

export const nonBlankArgument = (name: string) =>
  Argument.String(name).pipe(
    Argument.filterMap(
      (input) => (input.trim() === "" ? Option.none() : Option.some(input.trim())),
      () => `a non-blank ${name}`
    )
  )

export const nonBlankFlag = (name: string) =>
  Flag.String(name).pipe(
    Flag.filterMap(
      (input) => (input.trim() === "" ? Option.none() : Option.some(input.trim())),
      () => `a non-blank ${name}`
    )
  )

/** A list command's paging: `--limit` (1 to 100, default 20 on the server) and `--after` (the last id of a page). */
export const pageFlags = (items: string, id: string) => ({
  limit: Flag.Int("limit").pipe(
    Flag.withDescription(`${items} per page, 1 to 100 (default 20)`),
    Flag.filter(
      (limit) => limit >= 1 && limit <= 100,
      () => "a page size from 1 to 100"
    ),
    Flag.optional
  ),
  after: nonBlankFlag("after").pipe(
    Flag.withMetavar("id"),
    Flag.withDescription(`Start after this ${id} (the last id of the previous page)`),
    Flag.optional
  )
})
