/** Transcription plugins, v1: `/v1/audio/transcriptions`, in OpenAI's shapes on the client side. */
import type { Effect } from "effect"
import type { PluginFailure, PluginIdentity, PluginModel, PricingRule, TokenCounter, UpstreamHttp } from "./common.ts"

export type * from "./common.ts"

export type TranscriptionFormat = "json" | "text" | "srt" | "verbose_json" | "vtt"

export interface TranscriptionRequest {
  readonly file: { readonly data: Uint8Array; readonly filename: string; readonly mimeType: string }
  readonly language?: string | undefined
  readonly prompt?: string | undefined
  readonly responseFormat: TranscriptionFormat
  readonly temperature?: number | undefined
  readonly timestampGranularities: ReadonlyArray<"word" | "segment">
}

export interface TranscriptionCall {
  readonly model: PluginModel
  readonly request: TranscriptionRequest
  /** The audio's length as the gateway measured it from the file, in milliseconds; null when it could not. */
  readonly measuredMillis: number | null
  readonly requestId: string
  readonly signal: AbortSignal
  /** The gateway's HTTP client for `model.upstreams` (it adds their credentials); set for every plugin loaded from the
   * operator config. */
  readonly http?: UpstreamHttp | undefined
  /** The gateway's tokenizer; set for every plugin loaded from the operator config. */
  readonly tokens?: TokenCounter | undefined
}

/** What a transcription used: audio length and/or tokens, as the upstream reported them (null = not reported). */
export interface TranscriptionUsage {
  readonly audioMillis: number | null
  readonly inputTokens: number | null
  readonly outputTokens: number | null
}

export interface TranscriptionReply {
  /** The body for the client in the requested format: JSON for json/verbose_json, text for text/srt/vtt. */
  readonly body: { readonly _tag: "Json"; readonly value: unknown } | { readonly _tag: "Text"; readonly text: string }
  readonly usage: TranscriptionUsage
}

export interface TranscriptionPricingInput {
  readonly request: TranscriptionRequest
  /** Measured length, or an upper bound derived from the file size when it could not be measured. */
  readonly audioMillis: number
  /** The tokenizer's count of the prompt. */
  readonly promptTokens: number
}

export interface TranscriptionPlugin extends PluginIdentity<"transcription"> {
  readonly pricing: PricingRule<TranscriptionPricingInput, TranscriptionUsage & { readonly measuredMillis: number }>
  readonly transcribe: (call: TranscriptionCall) => Effect.Effect<TranscriptionReply, PluginFailure>
}
