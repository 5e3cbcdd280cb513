/**
 * Tolerant readers for already-parsed JSON: converters must never throw on a vendor's new field or odd value.
 */
import { clip } from "../../../domain/Quoted.ts"

export type JsonRecord = Readonly<Record<string, unknown>>

export const isRecord = (u: unknown): u is JsonRecord => typeof u === "object" && u !== null && !Array.isArray(u)

export const asRecord = (u: unknown): JsonRecord => (isRecord(u) ? u : {})

export const asArray = (u: unknown): ReadonlyArray<unknown> => (Array.isArray(u) ? u : [])

export const asString = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

export const asNumber = (u: unknown): number | undefined =>
  typeof u === "number" && Number.isFinite(u) ? u : undefined

export const asCount = (u: unknown): number => {
  const n = asNumber(u)
  return n === undefined || n < 0 ? 0 : Math.floor(n)
}

/**
 * JSON text → value, `undefined` when the text is not JSON. An edge around `JSON.parse` (which throws): this runs for
 * every streamed chunk, where a Schema decode pipeline cost more than the parse itself.
 */
export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

/**
 * `raw` (JSON text) with its one `model` value changed from `from` to `to`, without parsing and re-serializing it:
 * defined only when `"model"` occurs exactly once in the text, directly followed by `:` and `from`. Quotes inside JSON
 * strings are escaped, so an unescaped `"model"` is a key or a string value equal to `model`; occurring once, it is the
 * key the parsed value was found under. Anything else (whitespace after the colon, a second `"model"`) is undefined:
 * the caller re-serializes.
 */
export const swapSoleModel = (raw: string, from: string, to: string): string | undefined => {
  const at = raw.indexOf('"model"')
  if (at === -1 || raw.indexOf('"model"', at + 7) !== -1) return undefined
  // A quote after an odd run of backslashes is escaped (the end of some other string): not a key, so decline.
  let backslashes = 0
  while (at - backslashes > 0 && raw.charCodeAt(at - backslashes - 1) === 92) backslashes += 1 // 92 = '\'
  if (backslashes % 2 === 1) return undefined
  const value = JSON.stringify(from)
  if (raw.charCodeAt(at + 7) !== 58 || !raw.startsWith(value, at + 8)) return undefined // 58 = ':'
  return `${raw.slice(0, at + 8)}${JSON.stringify(to)}${raw.slice(at + 8 + value.length)}`
}

/** Tool arguments: empty text means "no arguments"; anything that is not a JSON object is `undefined`. */
export const parseJsonObject = (text: string): JsonRecord | undefined => {
  if (text.trim() === "") return {}
  const value = parseJson(text)
  return isRecord(value) ? value : undefined
}

/** Deterministic 32-bit FNV-1a over UTF-16 code units, as 8 hex digits; used for ids and synthetic tags. */
export const fnv1a = (text: string): string => {
  let hash = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return hash.toString(16).padStart(8, "0")
}

/** Drops keys whose value is `undefined` so encoded bodies carry no `"x": undefined` noise. */
export const compact = <A extends Record<string, unknown>>(record: A): A => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(record)) if (value !== undefined) out[key] = value
  return out as A
}

/** A value for an error message; never calls a user-controlled `toString`. */
export const label = (u: unknown): string => (typeof u === "string" ? clip(u) : u === null ? "null" : typeof u)

/** The system line that asks for a JSON object where a target has no schema-less JSON mode of its own. */
export const JSON_OBJECT_INSTRUCTION = "Respond only with a single valid JSON object."
