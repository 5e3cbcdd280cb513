import { ceilDiv, formatMicros, type Micros, parseDecimal } from "../../domain/Money.ts"

/**
 * Operator prices for one model, each an integer count of micro-dollars per unit, so billing never touches a float.
 * Units: `input`/`output` per 1M tokens, `perMillionCharacters` per 1M characters, `perCall` per call, `perSecond` per
 * second of audio.
 */
export type ModelPricing = { readonly [K in PriceKey]?: Micros }

export const PriceKeys = ["input", "output", "perCall", "perSecond", "perMillionCharacters"] as const

export type PriceKey = (typeof PriceKeys)[number]

export const isPriceKey = (value: string): value is PriceKey => (PriceKeys as ReadonlyArray<string>).includes(value)

/** Which prices a plugin reads; `required` must all be present, and a model always needs at least one price. */
export interface PluginPriceKeys {
  readonly allowed: ReadonlyArray<PriceKey>
  readonly required: ReadonlyArray<PriceKey>
}

/** The built-in model families and the prices each one bills by. */
export const BuiltinPluginPricing: ReadonlyMap<string, PluginPriceKeys> = new Map<string, PluginPriceKeys>([
  ["text", { allowed: ["input", "output"], required: ["input", "output"] }],
  ["chat-image", { allowed: ["perCall"], required: ["perCall"] }],
  ["dedicated-image", { allowed: ["input", "output"], required: ["output"] }],
  ["video", { allowed: ["output"], required: ["output"] }],
  ["embeddings", { allowed: ["input"], required: ["input"] }],
  ["transcription", { allowed: ["perSecond", "input", "output"], required: [] }],
  ["speech", { allowed: ["perMillionCharacters", "input", "output"], required: [] }]
])

const TOO_PRECISE = /^[0-9]+\.[0-9]{7,}$/

/** Parses a decimal USD price ("0.15") to micro-dollars, or says why it is not one. */
export const parsePrice = (value: unknown): { readonly micros: Micros } | { readonly problem: string } => {
  if (typeof value !== "string") return { problem: "expected a decimal string" }
  const micros = parseDecimal(value)
  if (micros !== undefined) return { micros }
  return { problem: TOO_PRECISE.test(value) ? "at most 6 decimal places" : "expected a decimal string" }
}

/** The outside form of a price: a decimal string with six places ("0.150000"). */
export const formatPrice: (micros: Micros) => string = formatMicros

/**
 * The cost of `units` at a price quoted per million units, rounded up to the next micro-dollar so a charge never
 * undercounts.
 */
export const costPerMillion = (units: bigint, pricePerMillion: Micros): Micros =>
  ceilDiv(units * pricePerMillion, 1_000_000n)

/**
 * Path-named problems with a model's prices for a plugin: prices it does not bill by, required ones missing, or none.
 * `present` are the price keys the model sets, valid or not, so a bad value is not also reported as missing.
 */
export const pricingIssues = (
  path: string,
  pluginId: string,
  present: ReadonlyArray<string>,
  keys: PluginPriceKeys
): ReadonlyArray<string> => {
  const issues: Array<string> = []
  const allowed: ReadonlyArray<string> = keys.allowed
  for (const key of present) {
    if (isPriceKey(key) && !allowed.includes(key)) {
      issues.push(`${path}.${key}: does not apply to the ${pluginId} plugin (allowed: ${keys.allowed.join(", ")})`)
    }
  }
  for (const key of keys.required) {
    if (!present.includes(key)) issues.push(`${path}.${key}: required by the ${pluginId} plugin`)
  }
  if (keys.required.length === 0 && !present.some((key) => allowed.includes(key))) {
    issues.push(`${path}: expected at least one of ${keys.allowed.join(", ")}`)
  }
  return issues
}

/**
 * A pricing value whose JSON form is decimal strings ("0.150000"), so a config can be printed although bigint has no
 * JSON form.
 */
export const makeModelPricing = (prices: { [K in PriceKey]?: Micros }): ModelPricing =>
  Object.defineProperty(prices, "toJSON", {
    value: () => Object.fromEntries(Object.entries(prices).map(([key, micros]) => [key, formatMicros(micros)])),
    enumerable: false
  })
