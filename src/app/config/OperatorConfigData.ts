/** The operator config once decoded: what the rest of the gateway reads. */
import type { Redacted } from "effect"
import type { RateLimits } from "../../domain/keys/RateLimits.ts"
import type { ModelPricing } from "./ModelPricing.ts"
import type { UpstreamProtocol } from "./UpstreamProtocol.ts"

/** One upstream endpoint the gateway calls. */
export interface UpstreamConfig {
  /** The key it has under `upstreams:`, used in logs and errors. */
  readonly name: string
  readonly protocol: UpstreamProtocol
  /** Without a trailing slash; `/v1` for openai-style protocols, `/api/v3` for ark, the host root otherwise. */
  readonly baseUrl: string
  readonly apiKey: Redacted.Redacted<string>
  /** Longest wait for the response headers (time to first byte). */
  readonly timeoutMs: number
  /** Longest silence between two chunks of a response body. */
  readonly idleTimeoutMs: number
  /** Size of the keep-alive connection pool to this upstream's origin. */
  readonly maxConnections: number
}

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
}
