/**
 * Image plugins, v1: dedicated image models on OpenAI's images API (`/v1/images/generations`, `/v1/images/edits`).
 * The gateway validates the request, holds `estimate`, calls `generate` or `edit`, and settles `price(usage)`.
 */
import type { Effect } from "effect"
import type { PluginFailure, PluginIdentity, PluginModel, PricingRule, TokenCounter, UpstreamHttp } from "./common.ts"

export type * from "./common.ts"

/** One input image of an edit: bytes the gateway already holds, or a link still to be fetched (guarded). */
export type ImageInput =
  | {
      readonly _tag: "Bytes"
      readonly data: Uint8Array
      readonly mimeType: string
      readonly filename?: string | undefined
    }
  | { readonly _tag: "Url"; readonly url: string }

/** An images request as the client sent it, validated; enums stay open strings (vendors add values). */
export interface ImageRequest {
  readonly prompt: string
  readonly n: number
  readonly size?: string | undefined
  readonly quality?: string | undefined
  readonly background?: string | undefined
  readonly outputFormat?: string | undefined
  readonly outputCompression?: number | undefined
  readonly moderation?: string | undefined
  readonly inputFidelity?: string | undefined
  readonly user?: string | undefined
  /** Edits only: the images to edit (at least one) and an optional mask. */
  readonly images: ReadonlyArray<ImageInput>
  readonly mask?: ImageInput | undefined
}

export type ImageOperation = "generate" | "edit"

export interface ImagesCall {
  readonly model: PluginModel
  readonly operation: ImageOperation
  readonly request: ImageRequest
  readonly requestId: string
  /** Aborted when the client goes away or the gateway gives up: stop the upstream call. */
  readonly signal: AbortSignal
  /** The gateway's HTTP client for `model.upstreams` (it adds their credentials); set for every plugin loaded from the
   * operator config. */
  readonly http?: UpstreamHttp | undefined
  /** The gateway's tokenizer; set for every plugin loaded from the operator config. */
  readonly tokens?: TokenCounter | undefined
}

/** Token usage of an images call, as the upstream reported it (or estimated from the tables when it did not). */
export interface ImageUsage {
  readonly inputTokens: number
  readonly inputTextTokens: number
  readonly inputImageTokens: number
  readonly outputTokens: number
  readonly estimated: boolean
}

/** The reply: images only as base64, never links; `fields` are the upstream's echoes (size, quality, …). */
export interface ImagesReply {
  readonly created: number
  readonly images: ReadonlyArray<{ readonly b64Json: string; readonly revisedPrompt?: string | undefined }>
  readonly usage: ImageUsage
  readonly fields: Readonly<Record<string, unknown>>
}

export interface ImagesPricingInput {
  readonly operation: ImageOperation
  readonly request: ImageRequest
  /** The tokenizer's count of the prompt. */
  readonly promptTokens: number
}

export interface ImagesPlugin extends PluginIdentity<"images"> {
  readonly pricing: PricingRule<ImagesPricingInput, ImageUsage>
  readonly generate: (call: ImagesCall) => Effect.Effect<ImagesReply, PluginFailure>
  readonly edit: (call: ImagesCall) => Effect.Effect<ImagesReply, PluginFailure>
}
