import { formatMicros, type Micros, parseDecimal } from "../../domain/Money.ts"

/**
 * Operator prices for one model, each an integer count of micro-dollars per unit, so billing never touches a float.
 * The keys are the plugin's own (`input`/`output` per 1M tokens, `perCall`, `perSearchUnit`, …): each plugin declares
 * the keys it bills by, and the registry refuses any other at start.
 */
export type ModelPricing = { readonly [key: string]: Micros | undefined }

/** Which prices a plugin reads; `required` must all be present, and a model always needs at least one price. */
export interface PluginPriceKeys {
  readonly allowed: ReadonlyArray<string>
  readonly required: ReadonlyArray<string>
}

const PRICE_NAME = /^[a-z][A-Za-z0-9]{0,39}$/

/** Whether `key` can name a price at all (lowerCamelCase); which keys a model may use is its plugin's to say. */
export const isPriceName = (key: string): boolean => PRICE_NAME.test(key)

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
  for (const key of present) {
    if (!keys.allowed.includes(key)) {
      issues.push(`${path}.${key}: does not apply to the ${pluginId} plugin (allowed: ${keys.allowed.join(", ")})`)
    }
  }
  for (const key of keys.required) {
    if (!present.includes(key)) issues.push(`${path}.${key}: required by the ${pluginId} plugin`)
  }
  if (keys.required.length === 0 && !present.some((key) => keys.allowed.includes(key))) {
    issues.push(`${path}: expected at least one of ${keys.allowed.join(", ")}`)
  }
  return issues
}

/**
 * A pricing value whose JSON form is decimal strings ("0.150000"), so a config can be printed although bigint has no
 * JSON form.
 */
export const makeModelPricing = (prices: Record<string, Micros>): ModelPricing =>
  Object.defineProperty(prices, "toJSON", {
    value: () => Object.fromEntries(Object.entries(prices).map(([key, micros]) => [key, formatMicros(micros)])),
    enumerable: false
  })
