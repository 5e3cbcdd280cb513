/**
 * Deterministic tool arguments built from a tool's JSON schema: every required property gets a plausible value, so a
 * client that validates arguments against its own schema accepts the simulated call.
 */
import { arrayField, field, isRecord, numberField, stringField } from "./Json.ts"

const MAX_DEPTH = 6

const byName: ReadonlyArray<readonly [RegExp, string]> = [
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

const byFormat: Readonly<Record<string, string>> = {
  "date-time": "2026-01-01T12:00:00Z",
  date: "2026-01-01",
  time: "12:00:00",
  email: "ada@example.com",
  uri: "https://example.com",
  url: "https://example.com",
  uuid: "00000000-0000-4000-8000-000000000000"
}

const schemaType = (schema: unknown): string | undefined => {
  const type = field(schema, "type")
  if (typeof type === "string") return type.toLowerCase()
  if (Array.isArray(type)) {
    const first = type.find((t) => typeof t === "string" && t.toLowerCase() !== "null")
    return typeof first === "string" ? first.toLowerCase() : undefined
  }
  if (isRecord(field(schema, "properties"))) return "object"
  if (field(schema, "items") !== undefined) return "array"
  return undefined
}

const stringValue = (schema: unknown, name: string): string => {
  const format = stringField(schema, "format")
  if (format !== undefined && format in byFormat) return byFormat[format]!
  const match = byName.find(([pattern]) => pattern.test(name))
  const value = match ? match[1] : "example"
  const minLength = numberField(schema, "minLength") ?? 0
  return value.length >= minLength ? value : value.padEnd(minLength, "x")
}

const numberValue = (schema: unknown, integer: boolean): number => {
  const minimum = numberField(schema, "minimum") ?? numberField(schema, "exclusiveMinimum")
  const maximum = numberField(schema, "maximum") ?? numberField(schema, "exclusiveMaximum")
  let value = integer ? 1 : 1.5
  if (minimum !== undefined && value <= minimum) value = integer ? Math.floor(minimum) + 1 : minimum + 1
  if (maximum !== undefined && value >= maximum) value = integer ? Math.ceil(maximum) - 1 : maximum - 0.5
  if (minimum !== undefined && maximum !== undefined && value < minimum) value = minimum
  return value
}

/** A value that satisfies `schema`, named `name` (the property name guides plausible strings). */
export const valueFromSchema = (schema: unknown, name = "", depth = 0): unknown => {
  if (!isRecord(schema) || depth > MAX_DEPTH) return name === "" ? {} : "example"
  if ("const" in schema) return schema.const
  const choices = arrayField(schema, "enum")
  if (choices !== undefined && choices.length > 0) return choices[0]
  if ("default" in schema) return schema.default
  const variants = arrayField(schema, "anyOf") ?? arrayField(schema, "oneOf")
  if (variants !== undefined && variants.length > 0) {
    const concrete = variants.find((variant) => schemaType(variant) !== "null") ?? variants[0]
    return valueFromSchema(concrete, name, depth + 1)
  }
  const all = arrayField(schema, "allOf")
  if (all !== undefined && all.length > 0) return valueFromSchema(all[0], name, depth + 1)
  switch (schemaType(schema)) {
    case "string":
      return stringValue(schema, name)
    case "integer":
      return numberValue(schema, true)
    case "number":
      return numberValue(schema, false)
    case "boolean":
      return true
    case "null":
      return null
    case "array": {
      const count = Math.max(1, numberField(schema, "minItems") ?? 1)
      return Array.from({ length: count }, () => valueFromSchema(field(schema, "items"), name, depth + 1))
    }
    case "object":
      return objectFromSchema(schema, depth)
    default:
      return "example"
  }
}

/** An object with every required property (every property when `required` is absent) filled in. */
export const objectFromSchema = (schema: unknown, depth = 0): Record<string, unknown> => {
  const properties = field(schema, "properties")
  if (!isRecord(properties)) return {}
  const required = arrayField(schema, "required")
  const names =
    required === undefined ? Object.keys(properties) : required.filter((key): key is string => typeof key === "string")
  const result: Record<string, unknown> = {}
  for (const key of names) result[key] = valueFromSchema(properties[key], key, depth + 1)
  return result
}
