/** The operator config once decoded: what the rest of the gateway reads. */
import type { UpstreamConfig } from "@tollgate/plugin-spec"
import type { RateLimits } from "../../domain/keys/RateLimits.ts"
import type { ModelPricing } from "./ModelPricing.ts"

/** One upstream endpoint the gateway calls: the plugin spec's type, which plugins receive as is. */
export type { UpstreamConfig }

/** A model clients can name, the plugin that serves it, where it is sent, and what it costs. */
export interface ModelConfig {
  readonly id: string
  /** A built-in family (`text`, `chat-image`, …) or the id a loaded plugin declares. */
  readonly plugin: string
  /** In fallback order; never empty. */
  readonly upstreams: ReadonlyArray<UpstreamConfig>
  /** The model name sent upstream; the model id when the file leaves it out. */
  readonly upstreamModel: string
  readonly pricing: ModelPricing
  /** Output tokens to hold for when a request sets no `max_tokens`. */
  readonly maxOutputTokens: number | undefined
}

export interface OperatorConfigData {
  readonly upstreams: ReadonlyMap<string, UpstreamConfig>
  readonly models: ReadonlyArray<ModelConfig>
  /** Module specifiers to import; relative paths in the file are resolved against the file's folder. */
  readonly plugins: ReadonlyArray<string>
  readonly ledger: { readonly holdTtlSeconds: number }
  /** The rate limits of keys created without their own (`null`: no limit of that kind). */
  readonly rateLimits: RateLimits
  readonly video: {
    readonly pollIntervalMs: number
    readonly deadlineMinutes: number
    readonly retentionDays: number
  }
  /** Stored Responses API responses: kept this many days (30 when absent), then deleted. */
  readonly responses?: { readonly retentionDays: number }
}
