/** The operator config once decoded: what the rest of the gateway reads. */
import type { UpstreamConfig as PluginUpstream } from "@tollgate/plugin-spec"
import type { Redacted } from "effect"
import type { RateLimits } from "../../domain/keys/RateLimits.ts"
import type { ModelPricing } from "./ModelPricing.ts"
import type { UpstreamLimits } from "./decodeDeployments.ts"
import type { AlertWebhookConfig } from "./decodeAlerts.ts"
import type { BatchesConfig } from "./decodeBatches.ts"

/**
 * One upstream endpoint the gateway calls: the plugin spec's type and its key. A plugin loaded from the operator config
 * receives it without the key (app/PluginBoundary.ts); the gateway's HTTP capability adds the key by the name.
 */
export interface UpstreamConfig extends PluginUpstream {
  /** Never log it. */
  readonly apiKey: Redacted.Redacted<string>
  /** The operator marked its vendor batch API for batch lines (`batch: true`; openai and anthropic only). */
  readonly batch?: true | undefined
}

/**
 * One place a model is served: an upstream, the model name sent there, and how much of the model's traffic it takes
 * (see docs/deployments.md).
 */
export interface DeploymentConfig {
  readonly upstream: UpstreamConfig
  readonly upstreamModel: string
  /** Its share of its priority tier's traffic, relative to the others' (default 1). */
  readonly weight: number
  /** Lower is preferred: a tier takes traffic only while every better one is unhealthy or saturated (default 0). */
  readonly priority: number
  /** The most requests in flight here at once (null: no limit). */
  readonly maxConcurrency: number | null
  /** This deployment's own requests and tokens per minute (null: no limit). */
  readonly rpm: number | null
  readonly tpm: number | null
}

/** A model clients can name, the plugin that serves it, where it is sent, and what it costs. */
export interface ModelConfig {
  readonly id: string
  /** A built-in family (`text`, `chat-image`, …) or the id a loaded plugin declares. */
  readonly plugin: string
  /** Each distinct upstream of `deployments`, in the order first named; never empty. */
  readonly upstreams: ReadonlyArray<UpstreamConfig>
  /**
   * Where requests go, spread by weight within the best healthy priority tier. Absent: each of `upstreams` with the
   * model's `upstreamModel`, weight 1, priorities 0, 1, 2… (the order is the fallback order).
   */
  readonly deployments?: ReadonlyArray<DeploymentConfig> | undefined
  /** The model name sent upstream; the model id when the file leaves it out. */
  readonly upstreamModel: string
  readonly pricing: ModelPricing
  /** Output tokens to hold for when a request sets no `max_tokens`. */
  readonly maxOutputTokens: number | undefined
  /** Input and output tokens the model takes at once, for the Responses API's `truncation: "auto"` (absent: 128,000). */
  readonly contextWindow?: number | undefined
  /** A hosted tool (web search, …) the model's upstream does not run: left out with a warning (`omit`) or refused. */
  readonly hostedTools?: "omit" | "refuse" | undefined
  /**
   * Percent off every interactive price for a batch line where the model sets no batch price key (`batchInput`,
   * `batchOutput`); absent: 50 (app/batch/BatchPricing.ts).
   */
  readonly batchDiscountPercent?: number | undefined
}

/** How deployments' health is learned and how far one request may retry (`routing:` in the file). */
export interface RoutingConfig {
  /** Attempts per request, across deployments, before the first byte (default 3). */
  readonly maxAttempts: number
  /** No new attempt starts once this much time has passed since the first (default 30000). */
  readonly retryBudgetMs: number
  /** Failures in a row that open a deployment's circuit (default 5). */
  readonly failureThreshold: number
  /** How long an open circuit keeps requests away before a trial (default 30). */
  readonly circuitOpenSeconds: number
  /** Cooldown after a 429 without `retry-after`, doubling with each in a row (default 1, at most `maxCooldownSeconds`). */
  readonly cooldownSeconds: number
  readonly maxCooldownSeconds: number
}

export interface OperatorConfigData {
  readonly upstreams: ReadonlyMap<string, UpstreamConfig>
  /** Each upstream's own `rpm`, `tpm` and `maxConcurrency`, across every model it serves (absent: none). */
  readonly upstreamLimits?: ReadonlyMap<string, UpstreamLimits> | undefined
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
  /** Webhooks for every account and for the operator's own events (absent: none). */
  readonly alerts?: ReadonlyArray<AlertWebhookConfig> | undefined
  /** Absent: the defaults (`RoutingDefaults`). */
  readonly routing?: RoutingConfig | undefined
  /** The batch worker's share of the deployments, lines at once and lease (absent: `BatchesDefaults`). */
  readonly batches?: BatchesConfig | undefined
  /** Stored Responses API responses: kept this many days (30 when absent), then deleted. */
  readonly responses?: { readonly retentionDays: number }
  /** Batch files (`/v1/files`, and the output and error files batches write): kept this many days (30 when absent). */
  readonly files?: { readonly retentionDays: number }
}
