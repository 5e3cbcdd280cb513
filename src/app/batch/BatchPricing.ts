/**
 * Batch prices: a model's `batchInput` and `batchOutput` price keys when the operator sets them, else half of its
 * interactive prices (rounded up to the micro-dollar per 1M). Every other price key of the model (cache reads and
 * writes, web searches) is halved as well. The result is the model with its prices swapped, so a line is estimated
 * and priced by the plugin's own pricing rule, exactly as an interactive call is. The model lists (`GET /v1/models`,
 * `GET /admin/models`) show the same prices, from `batchPricesOf`.
 */
import { ceilDiv, type Micros } from "../../domain/Money.ts"
import type { PluginModel } from "../../plugins/ModelPlugin.ts"
import type { ModelPricing } from "../config/ModelPricing.ts"
import type { ResolvedModel } from "../PluginRegistry.ts"

/** Price keys that name a batch price, with the interactive key each replaces. */
export const BATCH_PRICE_KEYS: Readonly<Record<string, string>> = { batchInput: "input", batchOutput: "output" }

const half = (price: Micros): Micros => ceilDiv(price, 2n)

/** What a batch line of a model priced `pricing` pays, per key of its plugin's pricing rule. */
export const batchPrices = (pricing: ModelPricing): Record<string, Micros> => {
  const prices: Record<string, Micros> = {}
  for (const [key, price] of Object.entries(pricing)) {
    if (key in BATCH_PRICE_KEYS || price === undefined) continue
    prices[key] = half(price)
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

/** `model` priced for a batch line. */
export const batchPriced = (model: PluginModel): PluginModel => ({ ...model, pricing: batchPrices(model.pricing) })

/** A model's batch prices, or null when no batch endpoint serves its kind (chat and embeddings models run in batches). */
export const batchPricesOf = (resolved: ResolvedModel): Record<string, Micros> | null =>
  resolved.kind === "chat" || resolved.kind === "embeddings" ? batchPrices(resolved.model.pricing) : null
