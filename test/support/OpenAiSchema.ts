/**
 * OpenAI's published OpenAPI document (`../shared/spec/openai-openapi.yaml`) as a validator: any component schema,
 * `$ref`s resolved by Ajv against the whole document. OpenAPI 3.1 schemas are JSON Schema 2020-12. The YAML is parsed
 * once per process (about 3 MB), and each component compiled once.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"

export const OPENAI_SPEC_PATH = fileURLToPath(new URL("../../../shared/spec/openai-openapi.yaml", import.meta.url))

const DOCUMENT_ID = "https://tollgate.invalid/openai-openapi.json"

/**
 * Some schemas still say `nullable: true` (OpenAPI 3.0), which Ajv rejects without a sibling `type`; rewritten to the
 * 2020-12 spelling (`null` added to `type` and `enum`, or an `anyOf` with `{type: "null"}`).
 */
const withoutNullable = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(withoutNullable)
  if (typeof node !== "object" || node === null) return node
  const { nullable, ...rest } = node as Record<string, unknown>
  const mapped = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, withoutNullable(value)]))
  if (nullable !== true) return mapped
  // OpenAPI 3.0's `nullable` admits null even past an `enum`.
  if (Array.isArray(mapped.enum) && !mapped.enum.includes(null)) mapped.enum = [...mapped.enum, null]
  if (typeof mapped.type === "string") return { ...mapped, type: [mapped.type, "null"] }
  if (Array.isArray(mapped.type))
    return mapped.type.includes("null") ? mapped : { ...mapped, type: [...mapped.type, "null"] }
  return { anyOf: [mapped, { type: "null" }] }
}

let ajv: Ajv2020 | undefined
const compiled = new Map<string, ValidateFunction>()

const validatorFor = (component: string): ValidateFunction => {
  const cached = compiled.get(component)
  if (cached !== undefined) return cached
  if (ajv === undefined) {
    const parsed: unknown = parse(readFileSync(OPENAI_SPEC_PATH, "utf8"), { maxAliasCount: -1 })
    const document = withoutNullable(parsed) as Record<string, unknown>
    // Not strict: the document carries OpenAPI keywords (`discriminator`, `x-oai-*`) that are not JSON Schema.
    ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
    addFormats.default(ajv)
    ajv.addSchema({ ...document, $id: DOCUMENT_ID })
  }
  const validate = ajv.compile({ $ref: `${DOCUMENT_ID}#/components/schemas/${component}` })
  compiled.set(component, validate)
  return validate
}

export type OpenAiComponent =
  | "CreateChatCompletionResponse"
  | "CreateChatCompletionStreamResponse"
  | "ListModelsResponse"
  | "ErrorResponse"
  | (string & {})

/** The schema's complaints about `value` as `component`, one line each; empty when it conforms. */
export const openAiSchemaErrors = (component: OpenAiComponent, value: unknown): ReadonlyArray<string> => {
  const validate = validatorFor(component)
  if (validate(value)) return []
  return (validate.errors ?? []).map(
    (error: ErrorObject) => `${error.instancePath || "/"} ${error.message ?? ""} ${JSON.stringify(error.params)}`
  )
}

/** Throws with every complaint when `value` does not conform to `component`. */
export const assertOpenAiSchema = (component: OpenAiComponent, value: unknown): void => {
  const errors = openAiSchemaErrors(component, value)
  if (errors.length > 0) {
    throw new Error(`not a valid ${component}:\n  ${errors.join("\n  ")}\n${JSON.stringify(value, null, 2)}`)
  }
}
