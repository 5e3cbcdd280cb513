/**
 * OpenAI's published OpenAPI document as a validator: any component schema, `$ref`s resolved by Ajv against the whole
 * document. OpenAPI 3.1 schemas are JSON Schema 2020-12. The YAML is parsed once per process (about 3 MB), and each
 * component compiled once.
 *
 * The document is not part of the repository: it is found where `TOLLGATE_OPENAI_SPEC` points (a copy of OpenAI's
 * published `openapi.yaml`), or where the CI workspace keeps one. On a bare clone neither exists, and `npm test` must
 * still pass: the schema checks then pass vacuously, and the reason is printed once per worker process (files share
 * them: vitest.config.ts) and shown as a skipped test in every file that validates (`skipWithoutOpenAiSpec`), so
 * nobody mistakes a bare clone's green run for a validated one.
 */
import { it } from "@effect/vitest"
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { parse } from "yaml"

export const OPENAI_SPEC_PATH =
  process.env.TOLLGATE_OPENAI_SPEC ??
  fileURLToPath(new URL("../../../shared/spec/openai-openapi.yaml", import.meta.url))

/** Why the schema checks cannot run here, or undefined when the document is present. */
export const openAiSpecMissing: string | undefined = existsSync(OPENAI_SPEC_PATH)
  ? undefined
  : `OpenAI's OpenAPI document is not at ${OPENAI_SPEC_PATH} (set TOLLGATE_OPENAI_SPEC to its path): ` +
    "responses are not validated against OpenAI's schema in this run"

let warned = false
const warnMissing = (): void => {
  if (warned || openAiSpecMissing === undefined) return
  warned = true
  console.warn(`[skipped] ${openAiSpecMissing}`)
}

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
  if (openAiSpecMissing !== undefined) {
    warnMissing()
    return []
  }
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

/**
 * Registers a test that is skipped, with the reason in its name, when the document is missing: a file whose checks
 * validate against OpenAI's schema calls it once, so the report shows which files ran without that validation.
 */
export const skipWithoutOpenAiSpec = (): void => {
  it.skipIf(openAiSpecMissing !== undefined)(
    openAiSpecMissing === undefined
      ? "OpenAI's published OpenAPI document is present, so responses are validated against it"
      : `skipped: ${openAiSpecMissing}`,
    () => {
      if (!existsSync(OPENAI_SPEC_PATH)) throw new Error(`${OPENAI_SPEC_PATH} is gone`)
    }
  )
}
