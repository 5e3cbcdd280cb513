/**
 * Video plugins, v1: asynchronous tasks on `/v1/videos`. The gateway owns the task (its events, hold, polling
 * schedule and stored content); a plugin only speaks its upstream's task API: create, poll, download.
 */
import type { Effect } from "effect"
import type { PluginFailure, PluginIdentity, PluginModel, PricingRule, TokenCounter, UpstreamHttp } from "./common.ts"

export type * from "./common.ts"

export type VideoResolution = "480p" | "720p" | "1080p"
export type VideoRatio = "16:9" | "9:16" | "1:1" | "4:3" | "3:4" | "21:9"
export type VideoInputType = "text_to_video" | "first_last_frame" | "reference"

/** A validated video request. */
export interface VideoRequest {
  readonly prompt: string
  readonly seconds: number
  readonly resolution: VideoResolution
  readonly ratio: VideoRatio
  readonly inputType: VideoInputType
  /** Public image links (jpg/png/webp), in order: for `first_last_frame` the first is the start frame. */
  readonly images: ReadonlyArray<string>
  /** Public MP4 links. */
  readonly videos: ReadonlyArray<string>
}

export interface VideoCall {
  readonly model: PluginModel
  readonly request: VideoRequest
  /** The gateway's task id, for logs and upstream metadata. */
  readonly taskId: string
  readonly signal: AbortSignal
  /** The gateway's HTTP client for `model.upstreams` (it adds their credentials); set for every plugin loaded from the
   * operator config. */
  readonly http?: UpstreamHttp | undefined
  /** The gateway's tokenizer; set for every plugin loaded from the operator config. */
  readonly tokens?: TokenCounter | undefined
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
      /** The upstream's reported `completion_tokens`; null when it reports none. */
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

export interface VideosPlugin extends PluginIdentity<"videos"> {
  readonly pricing: PricingRule<VideoRequest, VideoUsage>
  /** Optional and pure: why this model cannot take the request at all, checked at submit before anything is held. */
  readonly check?: ((request: VideoRequest, model: PluginModel) => PluginFailure | undefined) | undefined
  /** Creates the upstream task (trying the model's upstreams in order); returns its id and which upstream took it. */
  readonly create: (
    call: VideoCall
  ) => Effect.Effect<{ readonly upstreamTaskId: string; readonly upstreamIndex: number }, PluginFailure>
  /**
   * The upstream's view of the task. An upstream that does not know the task is reported as a failure with reason
   * `not_found`, or as `Failed` with code `upstream_task_missing`; the gateway believes either only after a few polls
   * in a row (a vendor may not see a task it has just created).
   */
  readonly poll: (task: VideoTaskRef) => Effect.Effect<VideoUpstreamStatus, PluginFailure>
  readonly download: (task: VideoTaskRef, videoUrl: string) => Effect.Effect<VideoDownload, PluginFailure>
}
