/** Embeddings plugins, v1: `/v1/embeddings` and Gemini's embedding paths, in OpenAI's shapes on the client side. */
import type { Effect } from "effect"
import type { PluginFailure, PluginIdentity, PluginModel, PricingRule, TokenCounter, UpstreamHttp } from "./common.ts"

export type * from "./common.ts"

/** One input: a text (with Gemini's optional per-request hints) or a pre-tokenized array of token ids. */
export type EmbeddingInput =
  | {
      readonly _tag: "Text"
      readonly text: string
      readonly taskType?: string | undefined
      readonly title?: string | undefined
    }
  | { readonly _tag: "Tokens"; readonly tokens: ReadonlyArray<number> }

export interface EmbeddingsRequest {
  readonly inputs: ReadonlyArray<EmbeddingInput>
  readonly dimensions?: number | undefined
  readonly user?: string | undefined
}

export interface EmbeddingsCall {
  readonly model: PluginModel
  readonly request: EmbeddingsRequest
  /** The gateway's count of the inputs, as used for the hold; upstreams that report no usage are billed by it. */
  readonly inputTokens?: number | undefined
  readonly requestId: string
  readonly signal: AbortSignal
  /** The gateway's HTTP client for `model.upstreams` (it adds their credentials); set for every plugin loaded from the
   * operator config. */
  readonly http?: UpstreamHttp | undefined
  /** The gateway's tokenizer; set for every plugin loaded from the operator config. */
  readonly tokens?: TokenCounter | undefined
}

/** One vector per input, in input order; `promptTokens` as the upstream reported it (or counted when it did not). */
export interface EmbeddingsReply {
  readonly vectors: ReadonlyArray<ReadonlyArray<number>>
  readonly promptTokens: number
}

export interface EmbeddingsPlugin extends PluginIdentity<"embeddings"> {
  /** `inputTokens`: the gateway's count of the inputs (tokenizer for text, length for token arrays). */
  readonly pricing: PricingRule<
    { readonly request: EmbeddingsRequest; readonly inputTokens: number },
    { readonly promptTokens: number }
  >
  readonly embed: (call: EmbeddingsCall) => Effect.Effect<EmbeddingsReply, PluginFailure>
}
