/**
 * A model's prices as the model lists show them: decimal USD strings per unit of each key its plugin bills by
 * (`input`/`output` per 1M tokens, `perCall`, …), and its batch prices as `app/batch/BatchPricing.ts` decides them
 * (null for a model no batch endpoint serves).
 */
import { batchPricesOf, interactivePrices } from "../app/batch/BatchPricing.ts"
import { formatPrice, type ModelPricing } from "../app/config/ModelPricing.ts"
import type { ResolvedModel } from "../app/PluginRegistry.ts"

export const priceStrings = (pricing: ModelPricing): Record<string, string> => {
  const shown: Record<string, string> = {}
  for (const [key, price] of Object.entries(pricing)) {
    if (price !== undefined) shown[key] = formatPrice(price)
  }
  return shown
}

/** The batch prices of a model (undefined: not in the registry). */
export const batchPriceStrings = (resolved: ResolvedModel | undefined): Record<string, string> | null => {
  const prices = resolved === undefined ? null : batchPricesOf(resolved)
  return prices === null ? null : priceStrings(prices)
}

/** The fields `GET /v1/models` adds to OpenAI's model object: what a call and what a batch line pays. */
export const openAiModelPrices = (resolved: ResolvedModel | undefined) => ({
  pricing: resolved === undefined ? null : priceStrings(interactivePrices(resolved.model.pricing)),
  batch_pricing: batchPriceStrings(resolved)
})
