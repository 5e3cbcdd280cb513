/**
 * Gemini's `responseSchema` and a function declaration's `parameters` are its OpenAPI 3.0 subset (`Schema`), not JSON
 * Schema: types are upper-case enum names (`OBJECT`, `STRING`), `nullable` marks null, `propertyOrdering` orders the
 * output. OpenAI and Anthropic refuse those spellings, so the IR holds JSON Schema: this turns the subset into it.
 * The `…JsonSchema` fields (`responseJsonSchema`, `parametersJsonSchema`) are JSON Schema already and pass unchanged.
 */
import { isRecord } from "./json.ts"

const TYPES: Readonly<Record<string, string>> = {
  STRING: "string",
  NUMBER: "number",
  INTEGER: "integer",
  BOOLEAN: "boolean",
  ARRAY: "array",
  OBJECT: "object",
  NULL: "null"
}

/** Keywords of Gemini's subset that JSON Schema has no use for (and strict validators refuse). */
const DROPPED = new Set(["nullable", "propertyOrdering", "example"])

const typeOf = (raw: unknown): string | undefined => {
  if (typeof raw !== "string") return undefined
  if (raw === "TYPE_UNSPECIFIED") return undefined
  return TYPES[raw.toUpperCase()] ?? raw
}

export const geminiSchemaToJsonSchema = (schema: Readonly<Record<string, unknown>>): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED.has(key)) continue
    if (key === "type") {
      const type = typeOf(value)
      if (type !== undefined) out.type = type
    } else if (key === "properties" && isRecord(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, isRecord(sub) ? geminiSchemaToJsonSchema(sub) : sub])
      )
    } else if (key === "items" && isRecord(value)) {
      out.items = geminiSchemaToJsonSchema(value)
    } else if ((key === "anyOf" || key === "oneOf" || key === "allOf") && Array.isArray(value)) {
      out[key] = value.map((sub) => (isRecord(sub) ? geminiSchemaToJsonSchema(sub) : sub))
    } else {
      out[key] = value
    }
  }
  if (schema.nullable === true) {
    if (typeof out.type === "string") out.type = [out.type, "null"]
    else if (out.type === undefined && Array.isArray(out.anyOf)) out.anyOf = [...out.anyOf, { type: "null" }]
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null]
  }
  return out
}
