/**
 * Batch prices: a model's `batchInput` and `batchOutput` price keys when the operator sets them, else half of its
 * interactive prices (rounded up to the micro-dollar per 1M). Every other price key of the model (cache reads and
 * writes, web searches) is halved as well. The result is the model with its prices swapped, so a line is estimated
 * and priced by the plugin's own pricing rule, exactly as an interactive call is.
 */
import { ceilDiv, type Micros } from "../../domain/Money.ts"
import type { PluginModel } from "../../plugins/ModelPlugin.ts"

/** Price keys that name a batch price, with the interactive key each replaces. */
export const BATCH_PRICE_KEYS: Readonly<Record<string, string>> = { batchInput: "input", batchOutput: "output" }

const half = (price: Micros): Micros => ceilDiv(price, 2n)

/** `model` priced for a batch line. */
export const batchPriced = (model: PluginModel): PluginModel => {
  const prices: Record<string, Micros | undefined> = {}
  for (const [key, price] of Object.entries(model.pricing)) {
    if (key in BATCH_PRICE_KEYS || price === undefined) continue
    prices[key] = half(price)
  }
  for (const [batchKey, key] of Object.entries(BATCH_PRICE_KEYS)) {
    const price = model.pricing[batchKey]
    if (price !== undefined) prices[key] = price
  }
  return { ...model, pricing: prices }
}
