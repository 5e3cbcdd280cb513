/** The JSON Schema rules instance generation follows: implied types, merged bounds, formats, plausible values by name. */
import { createHash } from "node:crypto"
import { Option } from "effect"
import { isRecord, type JsonRecord } from "./Json.ts"
import type { Choose } from "./PatternSample.ts"

export const MAX_DEPTH = 8
export const GIVE_UP_DEPTH = 64
export const PATTERN_ATTEMPTS = 20

export const PLAUSIBLE_BY_NAME: ReadonlyArray<readonly [RegExp, string]> = [
  [/city|town/i, "Paris"],
  [/location|place|address/i, "Paris, France"],
  [/country/i, "France"],
  [/e-?mail/i, "ada@example.com"],
  [/url|link|uri|website/i, "https://example.com"],
  [/date/i, "2026-01-01"],
  [/time/i, "12:00"],
  [/unit/i, "celsius"],
  [/lang/i, "en"],
  [/name/i, "Ada"],
  [/id$/i, "id_1"],
  [/path|file/i, "/tmp/example.txt"],
  [/query|search|question|prompt|text|input|message/i, "example query"]
]

export const WORDS = ["example", "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"] as const

export const BY_FORMAT: Readonly<Record<string, string>> = {
  "date-time": "2026-01-01T12:00:00Z",
  date: "2026-01-01",
  time: "12:00:00Z",
  duration: "P1D",
  email: "ada@example.com",
  "idn-email": "ada@example.com",
  hostname: "example.com",
  "idn-hostname": "example.com",
  ipv4: "192.0.2.1",
  ipv6: "2001:db8::1",
  uri: "https://example.com",
  "uri-reference": "https://example.com",
  iri: "https://example.com",
  "iri-reference": "https://example.com",
  url: "https://example.com",
  uuid: "00000000-0000-4000-8000-000000000000"
}

export const compile = Option.liftThrowable((pattern: string) => new RegExp(pattern, "u"))

/** A seeded chooser (sha256 of the seed feeds a xorshift generator). */
export const chooser = (seed: string): Choose => {
  const bytes = createHash("sha256").update(seed, "utf8").digest()
  let state = bytes.readUInt32LE(0) || 0x9e3779b9
  return (n) => {
    if (n <= 1) return 0
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) % n
  }
}

/** Lower-case type names of a schema: `type` as a string or array, plus "null" when OpenAPI's `nullable` is set. */
export const typesOf = (schema: JsonRecord): ReadonlyArray<string> | undefined => {
  const type = schema.type
  const listed =
    typeof type === "string"
      ? [type.toLowerCase()]
      : Array.isArray(type)
        ? type.filter((t): t is string => typeof t === "string").map((t) => t.toLowerCase())
        : undefined
  if (listed === undefined) return undefined
  return schema.nullable === true && !listed.includes("null") ? [...listed, "null"] : listed
}

/** The type a schema without `type` describes, judged by its keywords. */
export const impliedType = (schema: JsonRecord): string | undefined => {
  if (
    isRecord(schema.properties) ||
    "required" in schema ||
    "additionalProperties" in schema ||
    "minProperties" in schema
  )
    return "object"
  if ("items" in schema || "prefixItems" in schema || "minItems" in schema || "maxItems" in schema) return "array"
  if ("pattern" in schema || "format" in schema || "minLength" in schema || "maxLength" in schema) return "string"
  if (
    "minimum" in schema ||
    "maximum" in schema ||
    "exclusiveMinimum" in schema ||
    "exclusiveMaximum" in schema ||
    "multipleOf" in schema
  )
    return "number"
  return undefined
}

const LOWER_BOUNDS = new Set(["minimum", "minLength", "minItems", "minProperties"])
const UPPER_BOUNDS = new Set(["maximum", "maxLength", "maxItems", "maxProperties"])

/** One schema that demands what both do (for `allOf`, and a chosen `anyOf` variant with its siblings). */
export const merge = (a: JsonRecord, b: JsonRecord): JsonRecord => {
  const result: Record<string, unknown> = { ...a }
  for (const [key, value] of Object.entries(b)) {
    const mine = result[key]
    if (mine === undefined) {
      result[key] = value
      continue
    }
    if (key === "properties" && isRecord(mine) && isRecord(value)) {
      const properties: Record<string, unknown> = { ...mine }
      for (const [name, schema] of Object.entries(value)) {
        properties[name] = name in properties ? { allOf: [properties[name], schema] } : schema
      }
      result[key] = properties
    } else if (key === "required" && Array.isArray(mine) && Array.isArray(value)) {
      result[key] = [...new Set([...mine, ...value])]
    } else if (key === "type") {
      const left = typesOf({ type: mine })
      const right = typesOf({ type: value })
      if (left !== undefined && right !== undefined) {
        const both = left.filter((t) => right.includes(t) || (t === "number" && right.includes("integer")))
        result[key] = both.map((t) => (t === "number" && right.includes("integer") ? "integer" : t))
      }
    } else if (
      (LOWER_BOUNDS.has(key) || key === "exclusiveMinimum") &&
      typeof mine === "number" &&
      typeof value === "number"
    ) {
      result[key] = Math.max(mine, value)
    } else if (
      (UPPER_BOUNDS.has(key) || key === "exclusiveMaximum") &&
      typeof mine === "number" &&
      typeof value === "number"
    ) {
      result[key] = Math.min(mine, value)
    } else if (key === "enum" && Array.isArray(mine) && Array.isArray(value)) {
      const right = value.map((v) => JSON.stringify(v))
      result[key] = mine.filter((v) => right.includes(JSON.stringify(v)))
    } else if (key === "allOf" && Array.isArray(mine) && Array.isArray(value)) {
      result[key] = [...mine, ...value]
    } else if ((key === "items" || key === "additionalProperties") && (mine === false || value === false)) {
      result[key] = false
    } else if ((key === "items" || key === "additionalProperties") && isRecord(mine) && isRecord(value)) {
      result[key] = { allOf: [mine, value] }
    } else {
      result[key] = value
    }
  }
  return result
}

export const without = (schema: JsonRecord, key: string): JsonRecord => {
  const { [key]: _dropped, ...rest } = schema
  return rest
}

/** Does this variant mention a `$ref` anywhere (a recursive branch to avoid once deep enough)? */
export const mentionsRef = (schema: unknown): boolean => JSON.stringify(schema ?? null).includes('"$ref"')
