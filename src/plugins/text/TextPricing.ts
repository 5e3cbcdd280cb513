/**
 * The text family's pricing rule: per 1M tokens, the same on every protocol. The hold covers the tokenizer's count of
 * the input plus the request's output cap (or the model's); settlement uses the upstream's usage.
 *
 * Prompt caching: a cached input token is billed once, at its own price and never also at `input`: cache reads at
 * `cacheRead`, cache writes at `cacheWrite`, Anthropic's 1-hour writes at `cacheWrite1h` (the usage's
 * `inputTokens` already excludes both, see the chat IR). A model without a cache price bills those tokens at
 * `input` (`cacheWrite1h` falls back to `cacheWrite` first). Each part is rounded up to the micro-dollar on its own,
 * so the price is exactly the sum of its parts. The hold prices every counted input token at the highest input-side
 * price, since the tokenizer cannot tell which tokens the vendor will find cached.
 *
 * Hosted web search: each search the vendor ran (`Usage.webSearches`) costs `webSearch` (absent: nothing). A request
 * that offers a web search tool holds for HELD_WEB_SEARCHES of them; more are charged past the hold.
 */
import { costPerMillion } from "../../domain/Money.ts"
import type { Micros } from "../../domain/Money.ts"
import type { PluginModel, PricingRule } from "../ModelPlugin.ts"
import type { PriceKeys } from "../ModelPlugin.ts"
import { MAX_WEB_SEARCHES, wantsWebSearch } from "./convert/anthropicWebSearch.ts"
import type { ChatRequest, Usage } from "./convert/ChatIR.ts"

/**
 * The prices this family bills by (the operator config may set no others). `batchInput` and `batchOutput` are the
 * input and output prices of batch lines (app/batch/BatchPricing.ts); interactive calls never read them.
 */
export const TEXT_PRICE_KEYS: PriceKeys = {
  allowed: ["input", "output", "cacheRead", "cacheWrite", "cacheWrite1h", "webSearch", "batchInput", "batchOutput"],
  required: ["input", "output"]
}

/** The per-1M prices of each kind of token, cache prices resolved to their fallbacks. */
export const tokenPrices = (model: PluginModel) => {
  const input = model.pricing.input ?? 0n
  const cacheWrite = model.pricing.cacheWrite ?? input
  return {
    input,
    output: model.pricing.output ?? 0n,
    cacheRead: model.pricing.cacheRead ?? input,
    cacheWrite,
    cacheWrite1h: model.pricing.cacheWrite1h ?? cacheWrite
  }
}

/** As many as the gateway lets Anthropic's search run in one call (anthropicWebSearch.ts). */
export const HELD_WEB_SEARCHES = MAX_WEB_SEARCHES

/** The output the hold covers: what the request asks for, or the model's configured cap when it names none. */
export const outputCap = (request: ChatRequest, model: PluginModel): number =>
  request.maxTokens ?? model.maxOutputTokens

const max = (...values: ReadonlyArray<Micros>): Micros => {
  let highest = 0n
  for (const value of values) if (value > highest) highest = value
  return highest
}

/**
 * A usage's tokens by price: each token in exactly one part (input, cache reads, 5-minute and 1-hour cache writes,
 * output), parts that share a price billed together, each group rounded up to the micro-dollar once. A model without
 * cache prices is thus billed exactly as if its cached tokens were input.
 */
export const priceParts = (
  usage: Usage,
  model: PluginModel
): ReadonlyArray<{ readonly tokens: number; readonly perMillion: Micros }> => {
  const prices = tokenPrices(model)
  const oneHour = Math.min(usage.cacheWrite1hTokens ?? 0, usage.cacheWriteTokens)
  const byPrice = new Map<Micros, number>()
  const add = (tokens: number, perMillion: Micros) => byPrice.set(perMillion, (byPrice.get(perMillion) ?? 0) + tokens)
  add(usage.inputTokens, prices.input)
  add(usage.cacheReadTokens, prices.cacheRead)
  add(usage.cacheWriteTokens - oneHour, prices.cacheWrite)
  add(oneHour, prices.cacheWrite1h)
  const input = [...byPrice].map(([perMillion, tokens]) => ({ tokens, perMillion }))
  return [...input, { tokens: usage.outputTokens, perMillion: prices.output }]
}

export const textPricing: PricingRule<{ readonly request: ChatRequest; readonly inputTokens: number }, Usage> = {
  estimate: ({ request, inputTokens }, model) => {
    const prices = tokenPrices(model)
    const inputSide = [prices.input, prices.cacheRead, prices.cacheWrite, prices.cacheWrite1h]
    // Each extra input-side price is one more rounding up in `price`: at most one micro-dollar each.
    const roundings = BigInt(new Set(inputSide).size - 1)
    const searches = wantsWebSearch(request) ? BigInt(HELD_WEB_SEARCHES) * (model.pricing.webSearch ?? 0n) : 0n
    return (
      costPerMillion(BigInt(inputTokens), max(...inputSide)) +
      roundings +
      costPerMillion(BigInt(Math.max(outputCap(request, model), 0)), prices.output) +
      searches
    )
  },
  price: (usage, model) =>
    priceParts(usage, model).reduce((sum, part) => sum + costPerMillion(BigInt(part.tokens), part.perMillion), 0n) +
    BigInt(Math.max(0, Math.floor(usage.webSearches ?? 0))) * (model.pricing.webSearch ?? 0n)
}
