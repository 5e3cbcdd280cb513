/**
 * Instants and days as clients write them (ISO 8601), checked against the calendar and the range the store's
 * `timestamptz` and `date` columns take. `Date.parse` alone is not enough: it rolls 2026-02-30 over to March 2 (the
 * text then reaches Postgres, which refuses it) and reads 0000-01-01, a year Postgres does not have.
 */

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):(\d{2}))$/
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: years 1 to 9999, in UTC, whatever offset was written. */
export const EARLIEST_INSTANT_MS = -62_135_596_800_000
export const LATEST_INSTANT_MS = 253_402_300_799_999

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const daysInMonth = (year: number, month: number) =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31

const isCalendarDay = (year: number, month: number, day: number) =>
  year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)

/**
 * An ISO 8601 instant with a zone (`2026-12-31T23:59:59Z`, `2026-12-31T23:59+01:00`) as epoch milliseconds, or
 * undefined when it is not one, names a day that does not exist, or falls outside years 1 to 9999.
 */
export const parseInstant = (text: string): number | undefined => {
  const match = INSTANT.exec(text)
  if (match === null) return undefined
  const [year, month, day, hour, minute] = match.slice(1, 6).map(Number)
  const second = match[6] === undefined ? 0 : Number(match[6])
  const offsetHours = match[7] === undefined ? 0 : Number(match[7])
  const offsetMinutes = match[8] === undefined ? 0 : Number(match[8])
  if (!isCalendarDay(year, month, day) || hour > 23 || minute > 59 || second > 59) return undefined
  if (offsetHours > 23 || offsetMinutes > 59) return undefined
  const millis = Date.parse(text)
  return Number.isNaN(millis) || millis < EARLIEST_INSTANT_MS || millis > LATEST_INSTANT_MS ? undefined : millis
}

/** A calendar day written `YYYY-MM-DD` (years 1 to 9999), or undefined. */
export const parseDay = (text: string): string | undefined => {
  const match = DAY.exec(text)
  if (match === null) return undefined
  const [year, month, day] = match.slice(1, 4).map(Number)
  return isCalendarDay(year, month, day) ? text : undefined
}
