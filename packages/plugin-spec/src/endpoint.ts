/**
 * Plugins of a new kind, v1: a family the core has no endpoint for (rerank, moderation, …) declares its endpoint, its
 * request schema, its pricing and its call, and the gateway serves it with authentication, the key's model list, rate
 * limits, the hold, the settlement, metrics and the access log — no change to Tollgate itself.
 *
 * The endpoint answers JSON in OpenAI's style: errors are OpenAI error envelopes, the request body is a JSON object
 * that names its `model`. Several plugins may serve one kind; they must then declare the same endpoint.
 */
import type { Effect } from "effect"
import type { PluginFailure, PluginIdentity, PluginModel, PricingRule, TokenCounter, UpstreamHttp } from "./common.ts"
import type { StandardSchemaV1 } from "./standardSchema.ts"

export type * from "./common.ts"

export type * from "./standardSchema.ts"

/** The kinds the core serves itself; a new kind must take another name. */
export type BuiltinKind = "chat" | "images" | "videos" | "embeddings" | "transcription" | "speech"

export interface EndpointSpec {
  readonly method: "POST"
  /** The path clients call, under `/v1` (`/v1/rerank`); it must not be one the gateway already serves. */
  readonly path: `/v1/${string}`
}

/**
 * Every request of a new kind is for a model, as in OpenAI-style APIs. A client may leave `model` out when the plugin
 * declares a `defaultModel`: the gateway fills it in before the schema sees the body, so `request.model` is always set.
 */
export interface EndpointRequest {
  readonly model: string
}

/** What a call used, in the plugin's own units (`searchUnits`, `documents`): recorded in the ledger as is. */
export type EndpointUsage = Readonly<Record<string, number>>

export interface EndpointCall<Request extends EndpointRequest> {
  readonly model: PluginModel
  /** The body as the request schema decoded it. */
  readonly request: Request
  readonly requestId: string
  /** Aborted when the client goes away or the gateway gives up: stop the upstream call. */
  readonly signal: AbortSignal
  /** The gateway's pooled HTTP client for `model.upstreams`. */
  readonly http: UpstreamHttp
  /** The gateway's tokenizer (always given by the gateway; the contract suites pass the fixtures' `tokens`). */
  readonly tokens?: TokenCounter | undefined
}

export interface EndpointReply<Usage extends EndpointUsage> {
  /** The JSON body the client receives (status 200). */
  readonly body: unknown
  /** Priced by `pricing.price`; the hold's remainder goes back to the account. */
  readonly usage: Usage
}

export interface EndpointPlugin<
  Request extends EndpointRequest = EndpointRequest,
  Usage extends EndpointUsage = EndpointUsage
> extends PluginIdentity<string> {
  readonly endpoint: EndpointSpec
  /**
   * The model a request that names none is for, where the vendor's API makes `model` optional (OpenAI's moderations
   * default to `omni-moderation-latest`): an id of the operator's catalog. The key's model list applies to it as to a
   * model the client named; absent, `model` is required. Plugins of one kind must not declare different defaults.
   */
  readonly defaultModel?: string | undefined
  /** Validates the JSON body; its issues answer 400 naming the field. */
  readonly request: StandardSchemaV1<unknown, Request>
  /** `estimate(request)` is held before the call; `price(usage)` is charged after it. */
  readonly pricing: PricingRule<Request, Usage>
  readonly invoke: (call: EndpointCall<Request>) => Effect.Effect<EndpointReply<Usage>, PluginFailure>
}
