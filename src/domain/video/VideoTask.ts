/**
 * The video task aggregate: its state is the fold of its own stream `video-<id>`, and `decide` is the only way a
 * task changes. The money side lives in the account's ledger: submission places the hold, completion settles it,
 * failure releases it — each in the same transaction as the task event that causes it (the ledger writer commits a
 * task event as the "companion" of its ledger command), so a task and its money can never disagree, and because a
 * hold resolves exactly once, a task completes or fails exactly once even when two workers race.
 */
import type { VideoInputType, VideoRatio, VideoRequest, VideoResolution } from "./VideoSpec.ts"

export const videoStream = (taskId: string): string => `video-${taskId}`

export type VideoStatus = "queued" | "in_progress" | "completed" | "failed"

/** Why a task failed, which is also the refund reason of its hold. */
export type VideoFailureReason = "failed" | "cancelled" | "expired"

export interface VideoTaskSubmitted {
  readonly type: "VideoTaskSubmitted"
  readonly data: {
    readonly taskId: string
    readonly accountId: string
    readonly keyId: string | null
    readonly model: string
    readonly plugin: string
    readonly holdId: string
    /** The hold, a decimal string: the estimate at the model's price. */
    readonly held: string
    readonly estimatedTokens: string
    readonly request: VideoRequest
    /** The client's `Idempotency-Key` and a hash of its body: a retry with another body is refused. */
    readonly idempotencyKey: string | null
    readonly requestHash: string
    readonly requestId: string | null
    /** After this instant a task the upstream has not finished fails with a full refund. */
    readonly deadlineAt: string
    readonly at: string
  }
}

export interface VideoTaskDispatched {
  readonly type: "VideoTaskDispatched"
  readonly data: {
    readonly taskId: string
    readonly upstreamTaskId: string
    readonly upstreamIndex: number
    /**
     * The name (under `upstreams:`) of the upstream that took it: a worker claims the task only if its catalog has the
     * model on that upstream. Absent from tasks dispatched before it was recorded.
     */
    readonly upstreamName?: string
    readonly at: string
  }
}

export interface VideoProgressReported {
  readonly type: "VideoProgressReported"
  readonly data: {
    readonly taskId: string
    readonly status: "queued" | "in_progress"
    readonly progress: number
    readonly at: string
  }
}

export interface StoredVideo {
  /** The content store's key. */
  readonly key: string
  readonly bytes: number
  readonly contentType: string
  readonly width: number
  readonly height: number
  readonly durationMs: number
  readonly hasAudio: boolean
}

export interface VideoTaskCompleted {
  readonly type: "VideoTaskCompleted"
  readonly data: {
    readonly taskId: string
    readonly tokens: string
    /** true: the upstream reported the tokens; false: the formula on the delivered file. */
    readonly tokensReported: boolean
    readonly cost: string
    readonly content: StoredVideo
    /** The stored content is deleted after this instant. */
    readonly expiresAt: string
    readonly at: string
  }
}

export interface VideoTaskFailed {
  readonly type: "VideoTaskFailed"
  readonly data: {
    readonly taskId: string
    readonly reason: VideoFailureReason
    readonly code: string
    readonly message: string
    readonly at: string
  }
}

export interface VideoContentExpired {
  readonly type: "VideoContentExpired"
  readonly data: { readonly taskId: string; readonly at: string }
}

export type VideoTaskEvent =
  | VideoTaskSubmitted
  | VideoTaskDispatched
  | VideoProgressReported
  | VideoTaskCompleted
  | VideoTaskFailed
  | VideoContentExpired

export const VIDEO_EVENT_TYPES: ReadonlyArray<VideoTaskEvent["type"]> = [
  "VideoTaskSubmitted",
  "VideoTaskDispatched",
  "VideoProgressReported",
  "VideoTaskCompleted",
  "VideoTaskFailed",
  "VideoContentExpired"
]

export const isVideoEventType = (type: string): type is VideoTaskEvent["type"] =>
  (VIDEO_EVENT_TYPES as ReadonlyArray<string>).includes(type)

export interface VideoTaskState {
  readonly taskId: string
  readonly accountId: string
  readonly keyId: string | null
  readonly model: string
  readonly plugin: string
  readonly holdId: string
  readonly held: string
  readonly estimatedTokens: string
  readonly prompt: string
  readonly seconds: number
  readonly resolution: VideoResolution
  readonly ratio: VideoRatio
  readonly inputType: VideoInputType
  readonly images: ReadonlyArray<string>
  readonly videos: ReadonlyArray<string>
  readonly idempotencyKey: string | null
  readonly requestHash: string
  readonly requestId: string | null
  readonly status: VideoStatus
  readonly progress: number
  /** `name`: the upstream that took it, when recorded (see `VideoTaskDispatched`). */
  readonly upstream: { readonly taskId: string; readonly index: number; readonly name?: string } | null
  readonly tokens: string | null
  readonly tokensReported: boolean | null
  readonly cost: string | null
  readonly content: StoredVideo | null
  readonly error: { readonly reason: VideoFailureReason; readonly code: string; readonly message: string } | null
  readonly createdAt: string
  readonly deadlineAt: string
  readonly completedAt: string | null
  readonly failedAt: string | null
  readonly expiresAt: string | null
  readonly contentExpiredAt: string | null
  readonly updatedAt: string
  /** The stream's version after the last folded event. */
  readonly version: bigint
}

export const isTerminal = (status: VideoStatus): boolean => status === "completed" || status === "failed"

/** A task as it is submitted: queued, nothing sent upstream, nothing charged yet. */
const submitted = ({ data: d }: Extract<VideoTaskEvent, { readonly type: "VideoTaskSubmitted" }>): VideoTaskState => ({
  taskId: d.taskId,
  accountId: d.accountId,
  keyId: d.keyId,
  model: d.model,
  plugin: d.plugin,
  holdId: d.holdId,
  held: d.held,
  estimatedTokens: d.estimatedTokens,
  prompt: d.request.prompt,
  seconds: d.request.seconds,
  resolution: d.request.resolution,
  ratio: d.request.ratio,
  inputType: d.request.inputType,
  images: d.request.images,
  videos: d.request.videos,
  idempotencyKey: d.idempotencyKey,
  requestHash: d.requestHash,
  requestId: d.requestId,
  status: "queued",
  progress: 0,
  upstream: null,
  tokens: null,
  tokensReported: null,
  cost: null,
  content: null,
  error: null,
  createdAt: d.at,
  deadlineAt: d.deadlineAt,
  completedAt: null,
  failedAt: null,
  expiresAt: null,
  contentExpiredAt: null,
  updatedAt: d.at,
  version: 1n
})

/** Folds one event. A stream always starts with `VideoTaskSubmitted`; other events before it are ignored. */
export const evolve = (state: VideoTaskState | undefined, event: VideoTaskEvent): VideoTaskState | undefined => {
  if (event.type === "VideoTaskSubmitted") return submitted(event)
  if (state === undefined) return undefined
  const next = { ...state, version: state.version + 1n, updatedAt: event.data.at }
  switch (event.type) {
    case "VideoTaskDispatched":
      return {
        ...next,
        upstream: {
          taskId: event.data.upstreamTaskId,
          index: event.data.upstreamIndex,
          ...(event.data.upstreamName === undefined ? {} : { name: event.data.upstreamName })
        }
      }
    case "VideoProgressReported":
      return { ...next, status: event.data.status, progress: event.data.progress }
    case "VideoTaskCompleted":
      return {
        ...next,
        status: "completed",
        progress: 100,
        tokens: event.data.tokens,
        tokensReported: event.data.tokensReported,
        cost: event.data.cost,
        content: event.data.content,
        completedAt: event.data.at,
        expiresAt: event.data.expiresAt
      }
    case "VideoTaskFailed":
      return {
        ...next,
        status: "failed",
        error: { reason: event.data.reason, code: event.data.code, message: event.data.message },
        failedAt: event.data.at
      }
    case "VideoContentExpired":
      return { ...next, contentExpiredAt: event.data.at }
  }
}

export const fold = (events: ReadonlyArray<VideoTaskEvent>): VideoTaskState | undefined =>
  events.reduce<VideoTaskState | undefined>(evolve, undefined)

export type VideoCommand =
  | {
      readonly type: "Dispatch"
      readonly upstreamTaskId: string
      readonly upstreamIndex: number
      readonly upstreamName?: string
      readonly at: string
    }
  | {
      readonly type: "ReportProgress"
      readonly status: "queued" | "in_progress"
      readonly progress: number
      readonly at: string
    }
  | {
      readonly type: "Complete"
      readonly tokens: bigint
      readonly tokensReported: boolean
      readonly cost: string
      readonly content: StoredVideo
      readonly expiresAt: string
      readonly at: string
    }
  | {
      readonly type: "Fail"
      readonly reason: VideoFailureReason
      readonly code: string
      readonly message: string
      readonly at: string
    }
  | { readonly type: "ExpireContent"; readonly at: string }

export type VideoRejection =
  | { readonly _tag: "TaskFinished"; readonly status: VideoStatus }
  | { readonly _tag: "AlreadyDispatched" }
  | { readonly _tag: "NotDispatched" }
  | { readonly _tag: "NoContent" }

export type VideoDecision =
  | { readonly _tag: "Accepted"; readonly events: ReadonlyArray<VideoTaskEvent> }
  | { readonly _tag: "Rejected"; readonly rejection: VideoRejection }

const accept = (...events: ReadonlyArray<VideoTaskEvent>): VideoDecision => ({ _tag: "Accepted", events })
const reject = (rejection: VideoRejection): VideoDecision => ({ _tag: "Rejected", rejection })

/**
 * The task rules: nothing moves a finished task (except expiring its stored content); a task is dispatched once;
 * it completes only after dispatch; progress never goes backwards (a repeated or lower report is a no-op, so a
 * stale poll cannot rewind what a client has seen).
 */
export const decide = (state: VideoTaskState, command: VideoCommand): VideoDecision => {
  const taskId = state.taskId
  if (command.type === "ExpireContent") {
    if (state.status !== "completed" || state.content === null) return reject({ _tag: "NoContent" })
    if (state.contentExpiredAt !== null) return accept()
    return accept({ type: "VideoContentExpired", data: { taskId, at: command.at } })
  }
  if (isTerminal(state.status)) return reject({ _tag: "TaskFinished", status: state.status })
  switch (command.type) {
    case "Dispatch":
      if (state.upstream !== null) return reject({ _tag: "AlreadyDispatched" })
      return accept({
        type: "VideoTaskDispatched",
        data: {
          taskId,
          upstreamTaskId: command.upstreamTaskId,
          upstreamIndex: command.upstreamIndex,
          ...(command.upstreamName === undefined ? {} : { upstreamName: command.upstreamName }),
          at: command.at
        }
      })
    case "ReportProgress": {
      const progress = Math.max(0, Math.min(99, Math.trunc(command.progress)))
      const status = state.status === "in_progress" ? "in_progress" : command.status
      if (progress <= state.progress && status === state.status) return accept()
      return accept({
        type: "VideoProgressReported",
        data: { taskId, status, progress: Math.max(progress, state.progress), at: command.at }
      })
    }
    case "Complete":
      if (state.upstream === null) return reject({ _tag: "NotDispatched" })
      return accept({
        type: "VideoTaskCompleted",
        data: {
          taskId,
          tokens: command.tokens.toString(),
          tokensReported: command.tokensReported,
          cost: command.cost,
          content: command.content,
          expiresAt: command.expiresAt,
          at: command.at
        }
      })
    case "Fail":
      return accept({
        type: "VideoTaskFailed",
        data: { taskId, reason: command.reason, code: command.code, message: command.message, at: command.at }
      })
  }
}
