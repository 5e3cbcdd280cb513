/**
 * The plugin contract: what a model family — ours or a third party's — provides to the gateway. A plugin is a value:
 * its identity, the pricing keys it accepts, a pure pricing rule and `invoke`. It never touches SQL or the ledger:
 * the gateway places the hold from `estimate`, calls `invoke`, and settles from `price(usage)`.
 *
 * Chat-shaped families answer in any of the three wire dialects (`openai`, `anthropic`, `gemini`): a whole body, or
 * a stream of SSE events. The gateway converts to whatever dialect the client called, passes a matching dialect
 * through untouched, and does the accounting — so a plugin author writes one upstream call, not three encoders.
 *
 * Image families of the OpenAI images API (`kind: "images"`) answer `generate`/`edit` with base64 images and token
 * usage; the images gateway holds, invokes and settles them the same way.
 */
import type { Effect } from "effect"
import type { UpstreamConfig } from "../app/OperatorConfig.ts"
import { isPriceKey, type ModelPricing, type PriceKey, PriceKeys } from "../app/config/ModelPricing.ts"
import type { Micros } from "../domain/Money.ts"
import type { VideoRequest } from "../domain/video/VideoSpec.ts"
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
  /** A machine-readable reason the client may see (`moderation_blocked`, `unsupported_mime_type`, …). */
  readonly code?: string
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
  /**
   * Optional and pure: why this model cannot take the request at all (tools sent to an image model), checked before
   * anything is held, so the refusal leaves no trace in the ledger. Undefined = it can.
   */
  readonly check?: (client: ChatCall["client"], request: ChatRequest) => PluginFailure | undefined
  /**
   * Input tokens for the hold, counted from the client's body. Optional: without it the gateway runs its tokenizer.
   * A family whose price does not depend on input (flat per call) answers 0 instead of tokenizing megabytes of base64.
   */
  readonly countInput?: (client: ChatCall["client"]) => number
}

// ---------------------------------------------------------------------------------------------------------------------
// Images: the OpenAI images endpoints (`/v1/images/generations`, `/v1/images/edits`)

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

export interface ImagesPlugin {
  readonly specification: typeof PLUGIN_SPECIFICATION
  readonly id: string
  readonly family: string
  readonly kind: "images"
  readonly pricingKeys: { readonly allowed: ReadonlyArray<PriceKey>; readonly required: ReadonlyArray<PriceKey> }
  readonly pricing: PricingRule<ImagesPricingInput, ImageUsage>
  readonly generate: (call: ImagesCall) => Effect.Effect<ImagesReply, PluginFailure>
  readonly edit: (call: ImagesCall) => Effect.Effect<ImagesReply, PluginFailure>
}

// ---------------------------------------------------------------------------------------------------------------------
// Videos: asynchronous tasks (`/v1/videos`). The gateway owns the task (its events, hold, polling schedule, stored
// content); a plugin only speaks its upstream's task API: create, poll, download.

export interface VideoCall {
  readonly model: PluginModel
  readonly request: VideoRequest
  /** The gateway's task id, for logs and upstream metadata. */
  readonly taskId: string
  readonly signal: AbortSignal
}

export interface VideoTaskRef extends VideoCall {
  /** The upstream's task id, as `create` returned it. */
  readonly upstreamTaskId: string
  /** Which of the model's upstreams accepted the task (index into `model.upstreams`). */
  readonly upstreamIndex: number
}

/** The upstream's view of a task, mapped to the gateway's states. */
export type VideoUpstreamStatus =
  | { readonly _tag: "Pending"; readonly status: "queued" | "in_progress"; readonly progress: number }
  | {
      readonly _tag: "Succeeded"
      /** Where the result can be fetched (often a signed link valid for a day); `download` takes it. */
      readonly videoUrl: string
      /** The upstream's reported `completion_tokens`; null when it reports none (openai-videos). */
      readonly completionTokens: number | null
    }
  | {
      readonly _tag: "Failed"
      /** `failed` by the model, `cancelled` upstream, or `expired` upstream (past its execution deadline). */
      readonly reason: "failed" | "cancelled" | "expired"
      readonly code: string
      readonly message: string
    }

/** The bytes of a finished video, streamed; the body must be consumed or cancelled. */
export interface VideoDownload {
  readonly contentType: string
  readonly contentLength: number | null
  readonly body: AsyncIterable<Uint8Array>
}

/** What a finished video cost in tokens, and how the count was obtained. */
export interface VideoUsage {
  readonly tokens: bigint
  /** true: the upstream reported `completion_tokens`; false: the formula on the delivered file's size and length. */
  readonly reported: boolean
}

export interface VideosPlugin {
  readonly specification: typeof PLUGIN_SPECIFICATION
  readonly id: string
  readonly family: string
  readonly kind: "videos"
  readonly pricingKeys: { readonly allowed: ReadonlyArray<PriceKey>; readonly required: ReadonlyArray<PriceKey> }
  readonly pricing: PricingRule<VideoRequest, VideoUsage>
  /**
   * Optional and pure: why this model cannot take the request at all (an input mode its upstreams cannot express),
   * checked at submit before anything is held. Undefined = it can.
   */
  readonly check?: (request: VideoRequest, model: PluginModel) => PluginFailure | undefined
  /** Creates the upstream task (trying the model's upstreams in order); returns its id and which upstream took it. */
  readonly create: (
    call: VideoCall
  ) => Effect.Effect<{ readonly upstreamTaskId: string; readonly upstreamIndex: number }, PluginFailure>
  /**
   * The upstream's view of the task. An upstream that does not know the task (404) is reported as a failure with
   * status 404, or as `Failed` with code `upstream_task_missing`; the worker believes either only after a few polls
   * in a row (a vendor may not see a task it has just created).
   */
  readonly poll: (task: VideoTaskRef) => Effect.Effect<VideoUpstreamStatus, PluginFailure>
  readonly download: (task: VideoTaskRef, videoUrl: string) => Effect.Effect<VideoDownload, PluginFailure>
}

// ---------------------------------------------------------------------------------------------------------------------
// Embeddings, transcription, speech: OpenAI's shapes (protocols.md §7) on the client side; each family converts its
// upstream's answer into these values and the gateway encodes them for the client.

/**
 * One input of an embeddings request: a string, or a pre-tokenized array of token ids. A text may carry Gemini's
 * per-request hints (`taskType`, `title`, from the Gemini embeddings paths), which change Gemini's vectors; upstreams
 * without such fields ignore them.
 */
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
  /**
   * The gateway's count of the inputs, as used for the hold. Upstreams that report no usage (Gemini) are billed by it;
   * when absent the plugin counts the texts itself.
   */
  readonly inputTokens?: number | undefined
  readonly requestId: string
  readonly signal: AbortSignal
}

/** One vector per input, in input order; `promptTokens` as the upstream reported it (or counted when it did not). */
export interface EmbeddingsReply {
  readonly vectors: ReadonlyArray<ReadonlyArray<number>>
  readonly promptTokens: number
}

export interface EmbeddingsPlugin {
  readonly specification: typeof PLUGIN_SPECIFICATION
  readonly id: string
  readonly family: string
  readonly kind: "embeddings"
  readonly pricingKeys: { readonly allowed: ReadonlyArray<PriceKey>; readonly required: ReadonlyArray<PriceKey> }
  /** `inputTokens`: the gateway's count of the inputs (tokenizer for text, length for token arrays). */
  readonly pricing: PricingRule<
    { readonly request: EmbeddingsRequest; readonly inputTokens: number },
    { readonly promptTokens: number }
  >
  readonly embed: (call: EmbeddingsCall) => Effect.Effect<EmbeddingsReply, PluginFailure>
}

export const TRANSCRIPTION_FORMATS = ["json", "text", "srt", "verbose_json", "vtt"] as const
export type TranscriptionFormat = (typeof TRANSCRIPTION_FORMATS)[number]

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

export interface TranscriptionPlugin {
  readonly specification: typeof PLUGIN_SPECIFICATION
  readonly id: string
  readonly family: string
  readonly kind: "transcription"
  readonly pricingKeys: { readonly allowed: ReadonlyArray<PriceKey>; readonly required: ReadonlyArray<PriceKey> }
  readonly pricing: PricingRule<TranscriptionPricingInput, TranscriptionUsage & { readonly measuredMillis: number }>
  readonly transcribe: (call: TranscriptionCall) => Effect.Effect<TranscriptionReply, PluginFailure>
}

export const SPEECH_FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"] as const
export type SpeechFormat = (typeof SPEECH_FORMATS)[number]

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
}

/** The audio, streamed as it arrives; returning it means bytes may reach the client (no fallback after this). */
export interface SpeechReply {
  readonly contentType: string
  readonly body: AsyncIterable<Uint8Array>
}

export interface SpeechPlugin {
  readonly specification: typeof PLUGIN_SPECIFICATION
  readonly id: string
  readonly family: string
  readonly kind: "speech"
  readonly pricingKeys: { readonly allowed: ReadonlyArray<PriceKey>; readonly required: ReadonlyArray<PriceKey> }
  /** Priced from the input alone (characters, or tokens as the gateway counts them): estimate and price agree. */
  readonly pricing: PricingRule<
    { readonly request: SpeechRequest; readonly inputTokens: number },
    { readonly characters: number; readonly inputTokens: number }
  >
  readonly speak: (call: SpeechCall) => Effect.Effect<SpeechReply, PluginFailure>
}

export type ModelPlugin =
  | ChatPlugin
  | ImagesPlugin
  | VideosPlugin
  | EmbeddingsPlugin
  | TranscriptionPlugin
  | SpeechPlugin

/** Checks a value loaded from a third-party module before the registry accepts it. */
export const pluginShapeProblems = (value: unknown): ReadonlyArray<string> => {
  const problems: Array<string> = []
  const plugin = value as (Partial<ChatPlugin> & Partial<Omit<ImagesPlugin, "kind">>) | null
  if (typeof plugin !== "object" || plugin === null) return ["the module's default export is not an object"]
  if (plugin.specification !== PLUGIN_SPECIFICATION) {
    problems.push(`specification: expected "${PLUGIN_SPECIFICATION}"`)
  }
  if (typeof plugin.id !== "string" || plugin.id.length === 0) problems.push("id: expected a non-empty string")
  if (typeof plugin.family !== "string") problems.push("family: expected a string")
  const kind: unknown = plugin.kind
  const kinds = ["chat", "images", "videos", "embeddings", "transcription", "speech"]
  if (typeof kind !== "string" || !kinds.includes(kind)) {
    problems.push('kind: expected "chat", "images", "videos", "embeddings", "transcription" or "speech"')
  }
  if (typeof plugin.pricing?.estimate !== "function") problems.push("pricing.estimate: expected a function")
  if (typeof plugin.pricing?.price !== "function") problems.push("pricing.price: expected a function")
  if (kind === "images") {
    if (typeof plugin.generate !== "function") problems.push("generate: expected a function")
    if (typeof plugin.edit !== "function") problems.push("edit: expected a function")
  } else if (kind === "videos") {
    const video = value as Partial<VideosPlugin>
    for (const name of ["create", "poll", "download"] as const) {
      if (typeof video[name] !== "function") problems.push(`${name}: expected a function`)
    }
  } else if (kind === "embeddings" || kind === "transcription" || kind === "speech") {
    const method = { embeddings: "embed", transcription: "transcribe", speech: "speak" }[kind]
    if (typeof (value as Record<string, unknown>)[method] !== "function")
      problems.push(`${method}: expected a function`)
  } else if (typeof plugin.invoke !== "function") problems.push("invoke: expected a function")
  for (const list of ["allowed", "required"] as const) {
    const keys: unknown = plugin.pricingKeys?.[list]
    if (!Array.isArray(keys)) problems.push(`pricingKeys.${list}: expected an array`)
    else {
      const unknown = keys.filter((key) => !isPriceKey(String(key)))
      if (unknown.length > 0) {
        problems.push(
          `pricingKeys.${list}: unknown price key ${unknown.map(String).join(", ")} (known: ${PriceKeys.join(", ")})`
        )
      }
    }
  }
  return problems
}

export const pluginFailure = (
  status: number,
  message: string,
  extra: { readonly retryAfterSeconds?: number; readonly detail?: string; readonly code?: string } = {}
): PluginFailure => ({ _tag: "PluginFailure", status, message, ...extra })
