/** Speech plugins, v1: `/v1/audio/speech` (text to speech), in OpenAI's shapes on the client side. */
import type { Effect } from "effect"
import type { PluginFailure, PluginIdentity, PluginModel, PricingRule, TokenCounter, UpstreamHttp } from "./common.ts"

export type * from "./common.ts"

export type SpeechFormat = "mp3" | "opus" | "aac" | "flac" | "wav" | "pcm"

export interface SpeechRequest {
  readonly input: string
  readonly voice: string
  readonly responseFormat: SpeechFormat
  readonly speed?: number | undefined
  readonly instructions?: string | undefined
}

export interface SpeechCall {
  readonly model: PluginModel
  readonly request: SpeechRequest
  readonly requestId: string
  readonly signal: AbortSignal
  /** The gateway's HTTP client for `model.upstreams` (it adds their credentials); set for every plugin loaded from the
   * operator config. */
  readonly http?: UpstreamHttp | undefined
  /** The gateway's tokenizer; set for every plugin loaded from the operator config. */
  readonly tokens?: TokenCounter | undefined
}

/** The audio, streamed as it arrives; returning it means bytes may reach the client (no fallback after this). */
export interface SpeechReply {
  readonly contentType: string
  readonly body: AsyncIterable<Uint8Array>
}

export interface SpeechPlugin extends PluginIdentity<"speech"> {
  /** Priced from the input alone (characters, or tokens as the gateway counts them): estimate and price agree. */
  readonly pricing: PricingRule<
    { readonly request: SpeechRequest; readonly inputTokens: number },
    { readonly characters: number; readonly inputTokens: number }
  >
  readonly speak: (call: SpeechCall) => Effect.Effect<SpeechReply, PluginFailure>
}
