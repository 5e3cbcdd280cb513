/**
 * The plugin contract: what a model family — ours or a third party's — provides to the gateway. A plugin is a value:
 * its identity, the pricing keys it accepts, a pure pricing rule and `invoke`. It never touches SQL or the ledger:
 * the gateway places the hold from `estimate`, calls `invoke`, and settles from `price(usage)`.
 *
 * Chat-shaped families answer in any of the three wire dialects (`openai`, `anthropic`, `gemini`): a whole body, or
 * a stream of SSE events. The gateway converts to whatever dialect the client called, passes a matching dialect
 * through untouched, and does the accounting — so a plugin author writes one upstream call, not three encoders.
 */
import type { Effect } from "effect"
import type { UpstreamConfig } from "../app/OperatorConfig.ts"
import type { ModelPricing, PriceKey } from "../app/config/ModelPricing.ts"
import type { Micros } from "../domain/Money.ts"
import type { ChatRequest, Usage } from "./text/convert/ChatIR.ts"
import type { Dialect } from "./text/convert/StreamTransducer.ts"

export const PLUGIN_SPECIFICATION = "tollgate.plugin/v1"

/** One catalog model as its plugin sees it. */
export interface PluginModel {
  readonly id: string
  readonly upstreams: ReadonlyArray<UpstreamConfig>
  readonly upstreamModel: string
  readonly pricing: ModelPricing
  /** The output cap used for holds when a request names none. */
  readonly maxOutputTokens: number
}

export type ClientDialect = "openai" | "anthropic" | "gemini"

export interface ChatCall {
  readonly model: PluginModel
  /** The request in the gateway's internal representation (already validated). */
  readonly request: ChatRequest
  /** The client's own body and dialect, for plugins that can pass a matching dialect through untouched. */
  readonly client: { readonly dialect: ClientDialect; readonly body: Readonly<Record<string, unknown>> }
  readonly requestId: string
  /** Aborted when the client goes away or the gateway gives up: stop the upstream call. */
  readonly signal: AbortSignal
}

export interface SseFrame {
  readonly event?: string | undefined
  readonly data: string
}

export type ChatReply =
  /** A whole response body in `dialect`. */
  | { readonly _tag: "Body"; readonly dialect: Dialect; readonly body: unknown }
  /** A stream of SSE events in `dialect`. Returning this means the first byte may reach the client: no fallback. */
  | { readonly _tag: "Events"; readonly dialect: Dialect; readonly events: AsyncIterable<SseFrame> }

/** Why a plugin could not answer. `status` is the HTTP status the client should see. */
export interface PluginFailure {
  readonly _tag: "PluginFailure"
  readonly status: number
  readonly message: string
  readonly retryAfterSeconds?: number
  /** The vendor's error body, for logs only: never sent to the client, never carrying a key. */
  readonly detail?: string
}

export interface PricingRule<Input, U> {
  /** Pure: the most this call can cost, in micro-dollars; becomes the hold. */
  readonly estimate: (input: Input, model: PluginModel) => Micros
  /** Pure: what the call cost, from real usage. */
  readonly price: (usage: U, model: PluginModel) => Micros
}

export interface ChatPlugin {
  readonly specification: typeof PLUGIN_SPECIFICATION
  readonly id: string
  readonly family: string
  readonly kind: "chat"
  /** Pricing keys this plugin reads; `required` ones must be configured for every model it serves. */
  readonly pricingKeys: { readonly allowed: ReadonlyArray<PriceKey>; readonly required: ReadonlyArray<PriceKey> }
  readonly pricing: PricingRule<{ readonly request: ChatRequest; readonly inputTokens: number }, Usage>
  readonly invoke: (call: ChatCall) => Effect.Effect<ChatReply, PluginFailure>
}

export type ModelPlugin = ChatPlugin

/** Checks a value loaded from a third-party module before the registry accepts it. */
export const pluginShapeProblems = (value: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const plugin = value as Partial<ChatPlugin> | null
  if (typeof plugin !== "object" || plugin === null) return ["the module's default export is not an object"]
  if (plugin.specification !== PLUGIN_SPECIFICATION) {
    problems.push(`specification: expected "${PLUGIN_SPECIFICATION}"`)
  }
  if (typeof plugin.id !== "string" || plugin.id.length === 0) problems.push("id: expected a non-empty string")
  if (typeof plugin.family !== "string") problems.push("family: expected a string")
  if (plugin.kind !== "chat") problems.push('kind: expected "chat"')
  if (typeof plugin.pricing?.estimate !== "function") problems.push("pricing.estimate: expected a function")
  if (typeof plugin.pricing?.price !== "function") problems.push("pricing.price: expected a function")
  if (typeof plugin.invoke !== "function") problems.push("invoke: expected a function")
  if (!Array.isArray(plugin.pricingKeys?.allowed)) problems.push("pricingKeys.allowed: expected an array")
  return problems
}

export const pluginFailure = (
  status: number,
  message: string,
  extra: { readonly retryAfterSeconds?: number; readonly detail?: string } = {}
): PluginFailure => ({ _tag: "PluginFailure", status, message, ...extra })
