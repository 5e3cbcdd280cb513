/**
 * What every kind of plugin shares: the model as a plugin sees it, prices, failures, SSE frames and the upstream HTTP
 * capability. Types only: nothing here runs, so a plugin depends on this package for its shape and on `effect` alone at
 * run time, and a change in Tollgate's core cannot silently change what v1 means to a plugin.
 */
import type { Effect } from "effect"

/** The version of the contract a plugin implements; the gateway refuses a plugin that declares another. */
export type SpecificationVersion = "v1"

/** Integer micro-dollars (1 USD = 1,000,000). Never a float: round up with integer division. */
export type Micros = bigint

/**
 * The text wire protocols a chat plugin may answer in; the gateway converts to the one the client called. `openai` is
 * chat completions, `responses` OpenAI's Responses API.
 */
export type Dialect = "openai" | "anthropic" | "gemini" | "responses"

/** The wire protocols the gateway itself knows (each fixes how its base URL is written and how it authenticates). */
export type BuiltinUpstreamProtocol = "openai" | "anthropic" | "gemini" | "openai-responses" | "openai-videos" | "ark"

/**
 * The protocol an upstream speaks: a built-in one, or a name a plugin declares for its own vendor (lowercase letters,
 * digits and dashes: `acme-ndjson`). The gateway checks a built-in protocol's base URL; another protocol's is the
 * plugin's to interpret.
 */
export type UpstreamProtocol = BuiltinUpstreamProtocol | (string & {})

/**
 * How an upstream's key is sent, from the operator config's `auth:` (default: per built-in protocol — Anthropic's
 * `x-api-key`, Gemini's `x-goog-api-key`, a bearer token otherwise). The gateway's HTTP capability applies it.
 */
export type UpstreamAuth =
  | { readonly scheme: "bearer" }
  | { readonly scheme: "header"; readonly name: string }
  | { readonly scheme: "query"; readonly name: string }

/**
 * One upstream endpoint, from the operator config's `upstreams:`. Its credentials never reach a plugin: the gateway's
 * HTTP capability (`http`) adds them to each request it sends, by the upstream's `name`.
 */
export interface UpstreamConfig {
  /** Its key under `upstreams:`, for logs and errors. */
  readonly name: string
  readonly protocol: UpstreamProtocol
  /** How the key is sent (never the key itself); absent: the protocol's default. */
  readonly auth?: UpstreamAuth | undefined
  /** Without a trailing slash; `/v1` for openai-style protocols, `/api/v3` for ark, the host root otherwise. */
  readonly baseUrl: string
  /** Longest wait for the response headers (time to first byte). */
  readonly timeoutMs: number
  /** Longest silence between two chunks of a response body. */
  readonly idleTimeoutMs: number
  readonly maxConnections: number
}

/**
 * A price key: the name of a `pricing:` entry in the operator config (`input`, `perSearchUnit`, …), lowerCamelCase.
 * Each plugin declares its own; the gateway refuses at start any model priced by a key its plugin did not declare.
 */
export type PriceKey = string

/** The prices a plugin reads. `required` must all be configured; a model always needs at least one price. */
export interface PriceKeys {
  readonly allowed: ReadonlyArray<PriceKey>
  readonly required: ReadonlyArray<PriceKey>
}

/** One catalog model as its plugin sees it. */
export interface PluginModel {
  readonly id: string
  /**
   * Never empty. In a routed call (every kind's call but a video task's `create`) the one upstream the gateway's
   * routing chose for this attempt: failover to another deployment is the gateway's, decided from the call's
   * failure. Elsewhere (`check`, `notes`, pricing, video) every upstream of the model, in the operator's order.
   */
  readonly upstreams: ReadonlyArray<UpstreamConfig>
  /** The model name to send upstream. */
  readonly upstreamModel: string
  /** The operator's prices, in micro-dollars per the unit of each key (per 1M tokens for `input`/`output`). */
  readonly pricing: { readonly [key: PriceKey]: Micros | undefined }
  /** The output cap holds are placed for when a request names none. */
  readonly maxOutputTokens: number
  /**
   * What to do with a hosted tool (`ChatRequest.hostedTools`) no upstream of this model runs: `omit` leaves it out of
   * the upstream call and says so in a note (`ChatPlugin.notes`), `refuse` refuses the request. Absent: `omit`.
   */
  readonly hostedTools?: "omit" | "refuse" | undefined
}

/**
 * The gateway's tokenizer, so a per-token price holds what it will charge (not a byte count). Synchronous and pure:
 * usable in `estimate` and `price`. Given to every plugin loaded from the operator config (pricing and calls).
 */
export interface TokenCounter {
  /** The encoding it counts in: `o200k_base` (OpenAI's current models). */
  readonly encoding: string
  readonly count: (text: string) => number
}

/** A pure pricing rule: the same input always gives the same answer, with no clock, randomness or I/O. */
export interface PricingRule<Input, Usage> {
  /** The most this call can cost: the gateway holds it before calling the plugin. */
  readonly estimate: (input: Input, model: PluginModel, tokens?: TokenCounter) => Micros
  /** What the call cost, from the usage the reply reported; never above `estimate` for usage within the hold. */
  readonly price: (usage: Usage, model: PluginModel, tokens?: TokenCounter) => Micros
}

/**
 * Why a plugin could not answer. The gateway maps each reason to the status and error envelope of the protocol the
 * client called; a plugin never chooses an HTTP status.
 * - `invalid_request`: the request cannot be served as sent (the vendor refused it, or it cannot be expressed upstream)
 * - `rate_limited`: the vendor is rate limiting (say `retryAfterSeconds` when it did)
 * - `overloaded`: the vendor is overloaded
 * - `unavailable`: no upstream answered usably (connection refused or lost, a malformed reply, a 5xx)
 * - `timeout`: the upstream did not answer in time
 * - `not_found`: the upstream does not know the object (a task id)
 * - `cancelled`: the call was aborted (the client went away)
 * - `misconfigured`: the operator's config cannot serve this model (no upstream of a protocol the plugin speaks)
 */
export type FailureReason =
  | "invalid_request"
  | "rate_limited"
  | "overloaded"
  | "unavailable"
  | "timeout"
  | "not_found"
  | "cancelled"
  | "misconfigured"

export interface PluginFailure {
  readonly _tag: "PluginFailure"
  readonly reason: FailureReason
  /**
   * For the client only when the plugin itself refuses the request (`invalid_request` or `not_found` without
   * `upstreamStatus`, before asking its vendor): say what the client must change. Any other failure reaches the client
   * in the gateway's words for its reason, this message going to the logs; never a key, never the vendor's body.
   */
  readonly message: string
  /** A machine-readable code the client may see (`moderation_blocked`, `unsupported_mime_type`, …). */
  readonly code?: string | undefined
  /** The request field a refusal is about, as a path in the client's request (`tools[4].type`, `input`). */
  readonly param?: string | undefined
  /** Seconds the client should wait before retrying (rate limited, overloaded). */
  readonly retryAfterSeconds?: number | undefined
  /** The status the vendor answered, for logs. */
  readonly upstreamStatus?: number | undefined
  /** The vendor's error body, for logs only: never sent to the client, never carrying a key. */
  readonly detail?: string | undefined
}

/** One server-sent event. */
export interface SseFrame {
  readonly event?: string | undefined
  readonly data: string
}

/** What every plugin declares, whatever its kind. */
export interface PluginIdentity<Kind extends string> {
  readonly specificationVersion: SpecificationVersion
  /** What models name in `plugin:`; must not clash with another plugin's. */
  readonly id: string
  /** A label for logs and metrics. */
  readonly family: string
  readonly kind: Kind
  readonly pricingKeys: PriceKeys
}

/** A request to an upstream through the gateway's connection pools; credentials are added by the gateway. */
export interface UpstreamHttpRequest {
  readonly upstream: UpstreamConfig
  readonly method: "GET" | "POST" | "DELETE"
  /** Appended to the upstream's base URL: `/rerank`. */
  readonly path: string
  /** Lower-case names; never credentials. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Sent as is (`content-type: application/json` unless `headers` says otherwise). */
  readonly body?: string | Uint8Array | undefined
  readonly signal: AbortSignal
}

/**
 * A 2xx answer; other statuses, timeouts and connection failures fail with a `PluginFailure` already. Read the body
 * once, one way: whole (`json`, `text`) or as it arrives (`chunks`, `events`).
 */
export interface UpstreamHttpResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** The body parsed as JSON (a malformed body fails with reason `unavailable`). */
  readonly json: Effect.Effect<unknown, PluginFailure>
  readonly text: Effect.Effect<string, PluginFailure>
  /**
   * The body's bytes as they arrive (an NDJSON or any other streamed body), under the gateway's idle timeout. A read
   * that fails rejects with a `PluginFailure`; `return()` (a `break`) stops reading and aborts the upstream request.
   */
  readonly chunks: () => AsyncIterableIterator<Uint8Array>
  /** The body as server-sent events, parsed; failures and `return()` as for `chunks`. */
  readonly events: () => AsyncIterableIterator<SseFrame>
}

/**
 * The gateway's HTTP client: pooled, timed out, interruptible, keys kept out of logs. Every plugin loaded from the
 * operator config gets it as `call.http`, whatever its kind (the gateway's own families are called without it).
 */
export interface UpstreamHttp {
  readonly request: (request: UpstreamHttpRequest) => Effect.Effect<UpstreamHttpResponse, PluginFailure>
}
