/**
 * The text family's pricing rule: per input and output token, the same on both protocols. The hold covers the
 * tokenizer's count of the input plus the request's output cap (or the model's); settlement uses the upstream's
 * usage. Cache reads and writes are input tokens at the input price (no separate cache prices are configured).
 */
import { costPerMillion } from "../../domain/Money.ts"
import type { Micros } from "../../domain/Money.ts"
import type { PluginModel, PricingRule } from "../ModelPlugin.ts"
import type { ChatRequest, Usage } from "./convert/ChatIR.ts"

const price = (model: PluginModel, key: "input" | "output"): Micros => model.pricing[key] ?? 0n

/** The output the hold covers: what the request asks for, or the model's configured cap when it names none. */
export const outputCap = (request: ChatRequest, model: PluginModel): number =>
  request.maxTokens ?? model.maxOutputTokens

export const textPricing: PricingRule<{ readonly request: ChatRequest; readonly inputTokens: number }, Usage> = {
  estimate: ({ request, inputTokens }, model) =>
    costPerMillion(BigInt(inputTokens), price(model, "input")) +
    costPerMillion(BigInt(Math.max(outputCap(request, model), 0)), price(model, "output")),
  price: (usage, model) =>
    costPerMillion(BigInt(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens), price(model, "input")) +
    costPerMillion(BigInt(usage.outputTokens), price(model, "output"))
}
