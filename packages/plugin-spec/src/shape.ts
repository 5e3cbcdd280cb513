/**
 * The runtime check of a plugin value against this spec, shared by the gateway (before its registry accepts a loaded
 * module) and the contract suites: every problem at once, each naming the field, so an author fixes a broken plugin in
 * one pass instead of discovering it on the first call. No dependencies: importable from any runtime.
 */
import type { FailureReason } from "./common.ts"

/** Every failure reason of the spec, for runtime checks (the gateway's error schema, the contract suites). */
export const FAILURE_REASONS = [
  "invalid_request",
  "rate_limited",
  "overloaded",
  "unavailable",
  "timeout",
  "not_found",
  "cancelled",
  "misconfigured"
] as const satisfies ReadonlyArray<FailureReason>

// Compiles only while every reason of the spec is listed above.
const _listsEveryReason: [Exclude<FailureReason, (typeof FAILURE_REASONS)[number]>] extends [never] ? true : false =
  true

/** The contract version this build implements. */
export const SPECIFICATION_VERSION = "v1"

const BUILTIN_KINDS = ["chat", "images", "videos", "embeddings", "transcription", "speech"] as const

/** The functions each built-in kind must provide, besides `pricing.estimate` and `pricing.price`. */
const METHODS: Readonly<Record<(typeof BUILTIN_KINDS)[number], ReadonlyArray<string>>> = {
  chat: ["invoke"],
  images: ["generate", "edit"],
  videos: ["create", "poll", "download"],
  embeddings: ["embed"],
  transcription: ["transcribe"],
  speech: ["speak"]
}

const KIND_NAME = /^[a-z][a-z0-9-]{0,39}$/
const PRICE_KEY = /^[a-z][A-Za-z0-9]{0,39}$/
const ENDPOINT_PATH = /^\/v1(\/[a-z0-9][a-z0-9_-]*)+$/

export const isBuiltinKind = (kind: string): kind is (typeof BUILTIN_KINDS)[number] =>
  (BUILTIN_KINDS as ReadonlyArray<string>).includes(kind)

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const priceKeyProblems = (pricingKeys: unknown): ReadonlyArray<string> => {
  if (!isRecord(pricingKeys)) return ["pricingKeys: expected { allowed, required }"]
  const problems: Array<string> = []
  for (const list of ["allowed", "required"] as const) {
    const keys = pricingKeys[list]
    if (!Array.isArray(keys)) {
      problems.push(`pricingKeys.${list}: expected an array`)
      continue
    }
    const bad = keys.filter((key) => typeof key !== "string" || !PRICE_KEY.test(key))
    if (bad.length > 0) {
      problems.push(
        `pricingKeys.${list}: ${bad.map(String).join(", ")} is not a price key name (lowerCamelCase letters and digits)`
      )
    }
  }
  const allowed = Array.isArray(pricingKeys.allowed) ? pricingKeys.allowed : []
  if (Array.isArray(pricingKeys.required)) {
    const outside = pricingKeys.required.filter((key) => !allowed.includes(key))
    if (outside.length > 0) problems.push(`pricingKeys.required: ${outside.join(", ")} is not in pricingKeys.allowed`)
  }
  if (allowed.length === 0) problems.push("pricingKeys.allowed: expected at least one price key")
  return problems
}

/** What is wrong with a new kind's declaration: its endpoint and request schema. */
const endpointProblems = (plugin: Record<string, unknown>): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const endpoint = plugin.endpoint
  if (!isRecord(endpoint)) problems.push('endpoint: expected { method: "POST", path: "/v1/…" } for a new kind')
  else {
    if (endpoint.method !== "POST") problems.push('endpoint.method: expected "POST"')
    if (typeof endpoint.path !== "string" || !ENDPOINT_PATH.test(endpoint.path)) {
      problems.push("endpoint.path: expected a path under /v1 such as /v1/rerank")
    }
  }
  // A schema may be a function object (Effect Schema's are), so only its `~standard` property is looked at.
  const request = plugin.request as { readonly "~standard"?: unknown } | null | undefined
  const standard = request === null || request === undefined ? undefined : request["~standard"]
  if (!isRecord(standard) || typeof standard.validate !== "function") {
    problems.push("request: expected a Standard Schema (an object with ['~standard'].validate)")
  }
  if (typeof plugin.invoke !== "function") problems.push("invoke: expected a function")
  const defaultModel = plugin.defaultModel
  if (defaultModel !== undefined && (typeof defaultModel !== "string" || defaultModel === "")) {
    problems.push("defaultModel: expected a model id (a non-empty string), or nothing")
  }
  return problems
}

/** The package's major version that implements a specification version (`v1` → 1). */
const majorOf = (version: string): string => version.slice(1)

/** Why a plugin of another major version of the spec is refused, and what fixes it. */
const unknownMajor = (declared: string): string =>
  `specificationVersion: the plugin implements ${declared} of the plugin spec (@tollgate/plugin-spec@${majorOf(declared)}.x), ` +
  `but this gateway serves ${SPECIFICATION_VERSION} only (@tollgate/plugin-spec@${majorOf(SPECIFICATION_VERSION)}.x): ` +
  `use a release of the plugin built against @tollgate/plugin-spec@${majorOf(SPECIFICATION_VERSION)}.x, ` +
  `or a gateway that serves ${declared}`

/** Every problem with a loaded module's plugin value; empty when the registry can accept it. */
export const pluginShapeProblems = (value: unknown): ReadonlyArray<string> => {
  if (!isRecord(value)) return ["the module's default export is not an object"]
  const problems: Array<string> = []
  const declared = value.specificationVersion
  // Another major of the spec may mean anything by every other field: say only that, and how to fix it.
  if (typeof declared === "string" && /^v[0-9]+$/.test(declared) && declared !== SPECIFICATION_VERSION) {
    return [unknownMajor(declared)]
  }
  if (declared !== SPECIFICATION_VERSION) problems.push(`specificationVersion: expected "${SPECIFICATION_VERSION}"`)
  if (typeof value.id !== "string" || value.id.length === 0) problems.push("id: expected a non-empty string")
  if (typeof value.family !== "string") problems.push("family: expected a string")
  const pricing = value.pricing
  if (!isRecord(pricing) || typeof pricing.estimate !== "function") {
    problems.push("pricing.estimate: expected a function")
  }
  if (!isRecord(pricing) || typeof pricing.price !== "function") problems.push("pricing.price: expected a function")
  const kind = value.kind
  if (typeof kind !== "string" || !KIND_NAME.test(kind)) {
    problems.push(
      `kind: expected one of ${BUILTIN_KINDS.join(", ")}, or a new kind's name (lowercase letters, digits, dashes)`
    )
  } else if (isBuiltinKind(kind)) {
    for (const method of METHODS[kind]) {
      if (typeof value[method] !== "function") problems.push(`${method}: expected a function`)
    }
  } else problems.push(...endpointProblems(value))
  problems.push(...priceKeyProblems(value.pricingKeys))
  return problems
}
