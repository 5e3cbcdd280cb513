/**
 * Batch prices: a model's `batchInput` and `batchOutput` price keys when the operator sets them, else its interactive
 * prices less the model's `batchDiscountPercent` (50 when it sets none), rounded up to the micro-dollar per 1M. Every
 * other price key of the model (cache reads and writes, web searches) gets the same discount. The result is the model with its prices swapped, so a line is estimated
 * and priced by the plugin's own pricing rule, exactly as an interactive call is. The model lists (`GET /v1/models`,
 * `GET /admin/models`) show the same prices, from `batchPricesOf`.
 */
import { ceilDiv, type Micros } from "../../domain/Money.ts"
import type { PluginModel } from "../../plugins/ModelPlugin.ts"
import type { ModelPricing } from "../config/ModelPricing.ts"
import type { ResolvedModel } from "../PluginRegistry.ts"

/** Price keys that name a batch price, with the interactive key each replaces. */
export const BATCH_PRICE_KEYS: Readonly<Record<string, string>> = { batchInput: "input", batchOutput: "output" }

/** The discount off a model's interactive prices its batch lines get when it names none. */
export const DEFAULT_BATCH_DISCOUNT_PERCENT = 50

/** What a batch line of a model priced `pricing` pays, per key of its plugin's pricing rule. */
export const batchPrices = (
  pricing: ModelPricing,
  discountPercent: number = DEFAULT_BATCH_DISCOUNT_PERCENT
): Record<string, Micros> => {
  const kept = BigInt(100 - discountPercent)
  const prices: Record<string, Micros> = {}
  for (const [key, price] of Object.entries(pricing)) {
    if (key in BATCH_PRICE_KEYS || price === undefined) continue
    prices[key] = ceilDiv(price * kept, 100n)
  }
  for (const [batchKey, key] of Object.entries(BATCH_PRICE_KEYS)) {
    const price = pricing[batchKey]
    if (price !== undefined) prices[key] = price
  }
  return prices
}

/** What an interactive call pays: the model's prices less its batch keys. */
export const interactivePrices = (pricing: ModelPricing): Record<string, Micros> => {
  const prices: Record<string, Micros> = {}
  for (const [key, price] of Object.entries(pricing)) {
    if (!(key in BATCH_PRICE_KEYS) && price !== undefined) prices[key] = price
  }
  return prices
}

/** `model` priced for a batch line, at the discount of its registry entry (`batchDiscountPercent`). */
export const batchPriced = (model: PluginModel, discountPercent: number | undefined): PluginModel => ({
  ...model,
  pricing: batchPrices(model.pricing, discountPercent)
})

/** A model's batch prices, or null when no batch endpoint serves its kind (chat and embeddings models run in batches). */
export const batchPricesOf = (resolved: ResolvedModel): Record<string, Micros> | null =>
  resolved.kind === "chat" || resolved.kind === "embeddings"
    ? batchPrices(resolved.model.pricing, resolved.batchDiscountPercent)
    : null
