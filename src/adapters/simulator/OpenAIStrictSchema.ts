/**
 * OpenAI's checks of a schema sent with `strict: true` (Structured Outputs, strict function calling): the root is an
 * object, and every object lists all its properties in `required` and sets `additionalProperties: false`. The API
 * refuses other schemas with a 400 naming the place, in Python's tuple notation; the simulator does the same so a
 * converter or client that sends a non-strict schema finds out here rather than against the real API.
 */
import { arrayField, isRecord, type JsonRecord } from "./Json.ts"

/** Python's repr of a tuple of strings: `()`, `('a',)`, `('a', 'b')`. */
const context = (path: ReadonlyArray<string>): string =>
  path.length === 0 ? "()" : path.length === 1 ? `('${path[0]}',)` : `(${path.map((step) => `'${step}'`).join(", ")})`

const objectProblem = (schema: JsonRecord, path: ReadonlyArray<string>): string | undefined => {
  if (schema.additionalProperties !== false) {
    return `In context=${context(path)}, 'additionalProperties' is required to be supplied and to be false.`
  }
  const properties = isRecord(schema.properties) ? Object.keys(schema.properties) : []
  const required = arrayField(schema, "required") ?? []
  const missing = properties.find((key) => !required.includes(key))
  if (missing !== undefined) {
    return `In context=${context(path)}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`
  }
  return undefined
}

const problemAt = (schema: unknown, path: ReadonlyArray<string>): string | undefined => {
  if (!isRecord(schema)) return undefined
  const type = schema.type
  const isObject = type === "object" || (Array.isArray(type) && type.includes("object")) || isRecord(schema.properties)
  if (isObject) {
    const own = objectProblem(schema, path)
    if (own !== undefined) return own
  }
  if (isRecord(schema.properties)) {
    for (const [name, child] of Object.entries(schema.properties)) {
      const found = problemAt(child, [...path, "properties", name])
      if (found !== undefined) return found
    }
  }
  if (isRecord(schema.items)) {
    const found = problemAt(schema.items, [...path, "items"])
    if (found !== undefined) return found
  }
  for (const key of ["anyOf", "$defs", "definitions"] as const) {
    const nested = schema[key]
    const entries = Array.isArray(nested)
      ? nested.map((child, index) => [String(index), child] as const)
      : isRecord(nested)
        ? Object.entries(nested)
        : []
    for (const [name, child] of entries) {
      const found = problemAt(child, [...path, key, name])
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** Why OpenAI would refuse `schema` in strict mode, or undefined when it accepts it. */
export const strictSchemaProblem = (schema: unknown): string | undefined => {
  if (!isRecord(schema) || schema.type !== "object") {
    const type = isRecord(schema) ? JSON.stringify(schema.type ?? "None") : '"None"'
    return `schema must be a JSON Schema of 'type: "object"', got 'type: ${type}'.`
  }
  return problemAt(schema, [])
}
