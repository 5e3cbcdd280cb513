/**
 * What the video task's submit and worker share: errors, options, the ids a task is keyed by, the retry rules, and
 * the context both are built from.
 */
import type { Alerts } from "../alerts/Alerts.ts"
import { type Queue, Result, Schema } from "effect"
import { createHash, randomUUID } from "node:crypto"
import type { GuardedFetcher } from "../ports/GuardedFetcher.ts"
import type { MediaProbe } from "../ports/MediaProbe.ts"
import type { decide, VideoTaskState, VideoTaskSubmitted } from "../../domain/video/VideoTask.ts"
import type { VideoRequest } from "../../domain/video/VideoSpec.ts"
import { type PluginFailure, pluginFailure, type VideoUpstreamStatus } from "../../plugins/ModelPlugin.ts"
import type { PluginRegistry } from "../PluginRegistry.ts"
import type { InvalidChatRequest, ModelNotAllowed, ModelNotFound, UpstreamFailed } from "../ChatErrors.ts"
import type { ContentStore, ContentStoreError, ContentTooLarge } from "../ContentStore.ts"
import type { KnownVideoModel, VideoTaskStore } from "../ports/VideoTaskStore.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { Companion, Ledger } from "../Ledger.ts"
import type { LedgerRejected } from "../LedgerErrors.ts"
import type { OperatorConfig } from "../OperatorConfig.ts"
import type { IdempotencyConflict, StoreRefused, StoreUnavailable, StreamVersionConflict } from "../StoreErrors.ts"

export class VideoNotFound extends Schema.TaggedError<VideoNotFound>()("VideoNotFound", { id: Schema.String }) {}

/** The content was asked for before the task completed (or of a failed task). */
export class VideoNotReady extends Schema.TaggedError<VideoNotReady>()("VideoNotReady", {
  id: Schema.String,
  status: Schema.String
}) {}

/** The stored content is past its retention and was (or is about to be) deleted. */
export class VideoExpired extends Schema.TaggedError<VideoExpired>()("VideoExpired", {
  id: Schema.String,
  expiredAt: Schema.String
}) {}

export interface VideoWorkerOptions {
  /** Runs the polling loop in this instance; tests drive `pollDue` by hand instead. */
  readonly enabled: boolean
  /**
   * How long a claimed task stays with this instance without a sign of life. A step that takes longer (a slow poll,
   * a large download) renews the lease every third of it, so a crashed instance's tasks are taken over within one
   * lease, never after a whole step's worst case.
   */
  readonly leaseMillis: number
  readonly batch: number
  /** Largest video accepted from an upstream. */
  readonly maxContentBytes: number
  /** How often stored content is checked for expiry. */
  readonly sweepIntervalMillis: number
}

export const defaultVideoWorkerOptions: VideoWorkerOptions = {
  enabled: true,
  leaseMillis: 30_000,
  batch: 16,
  maxContentBytes: 1024 * 1024 * 1024,
  sweepIntervalMillis: 60_000
}

export interface SubmitVideo {
  readonly key: AuthenticatedKey
  readonly model: string
  readonly request: VideoRequest
  readonly idempotencyKey: string | null
  readonly requestId: string | null
}

export type SubmitError =
  | ModelNotFound
  | ModelNotAllowed
  | InvalidChatRequest
  | UpstreamFailed
  | IdempotencyConflict
  | LedgerRejected
  | StoreUnavailable
  | StoreRefused

/** What one worker round did, for logs and tests. */
export interface PollReport {
  readonly claimed: number
  readonly completed: number
  readonly failed: number
}

export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** A deterministic id per (account, Idempotency-Key), so a retried submit finds the task the first one created. */
export const taskIdFor = (accountId: string, idempotencyKey: string | null): string =>
  `video_${idempotencyKey === null ? randomUUID().replaceAll("-", "") : sha256(`${accountId}\u0000${idempotencyKey}`).slice(0, 32)}`

/** The hold's id (a uuid) derived from the task id: one hold per task, found again from the task alone. */
export const holdIdFor = (taskId: string): string => {
  const h = sha256(`hold:${taskId}`)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

export const contentKeyFor = (taskId: string) => `videos/${taskId}.mp4`

/** Back-off after an upstream failure: the poll interval doubled per failure, capped at five minutes. */
export const backoffMillis = (intervalMs: number, failures: number, retryAfterSeconds: number | undefined) =>
  Math.max(Math.min(intervalMs * 2 ** Math.min(failures, 8), 300_000), (retryAfterSeconds ?? 0) * 1000)

export const isRetryable = (failure: PluginFailure) =>
  failure.reason === "rate_limited" ||
  failure.reason === "overloaded" ||
  failure.reason === "unavailable" ||
  failure.reason === "timeout" ||
  failure.reason === "misconfigured"

/**
 * Polls in a row the upstream may answer 404 for a dispatched task before the task fails (with a full refund): the
 * first 404 and three retries on the failure back-off. A vendor may not find a task it has just created (a read
 * replica behind, a load balancer's other region), so one 404 proves nothing; the deadline still bounds the wait.
 */
export const MISSING_POLLS_BEFORE_FAILING = 4

/** The code of a task the upstream no longer knows (`VideoPlugin` reports a poll's 404 as a failure with it). */
export const UPSTREAM_TASK_MISSING = "upstream_task_missing"

/**
 * A poll's answer that the upstream does not know the task: a 404 failure, or the built-in plugin's mapping of one
 * (a `Failed` status with the code above). Undefined for any other answer.
 */
export const missingUpstreamTask = (
  polled: Result.Result<VideoUpstreamStatus, PluginFailure>
): PluginFailure | undefined => {
  if (Result.isFailure(polled)) return polled.failure.reason === "not_found" ? polled.failure : undefined
  const status = polled.success
  return status._tag === "Failed" && status.code === UPSTREAM_TASK_MISSING
    ? pluginFailure("not_found", status.message, { code: UPSTREAM_TASK_MISSING })
    : undefined
}

/** The events of an accepted task decision (rejections were handled before). */
export const decidedEvents = (decision: ReturnType<typeof decide>) =>
  decision._tag === "Accepted" ? decision.events : []

/** Errors a worker step can end with that the round does not absorb. */
export type WorkerError = StoreUnavailable | StreamVersionConflict | ContentStoreError | ContentTooLarge

export interface VideoContext {
  readonly store: VideoTaskStore["Service"]
  readonly ledger: Ledger["Service"]
  readonly registry: PluginRegistry["Service"]
  readonly contents: ContentStore["Service"]
  readonly config: OperatorConfig["Service"]
  readonly fetcher: GuardedFetcher["Service"]
  readonly media: MediaProbe["Service"]
  /** Told when a task fails (`video.failed`). */
  readonly alerts: Alerts["Service"]
  readonly options: VideoWorkerOptions
  /** This instance's worker id (lease owner). */
  readonly workerId: string
  readonly pollIntervalMs: number
  readonly deadlineMs: number
  readonly retentionMs: number
  /** Wakes the worker loop at once (a task was submitted here). */
  readonly kicks: Queue.Queue<void>
  /** The video models of this catalog, with their upstreams: what this worker can follow. */
  readonly known: ReadonlyArray<KnownVideoModel>
  /** A task's events as the companion of a ledger command, with the state they lead to. */
  readonly companion: (
    state: VideoTaskState | undefined,
    taskEvents: ReadonlyArray<VideoTaskSubmitted | ReturnType<typeof decidedEvents>[number]>
  ) => { companion: Companion; next: VideoTaskState }
}

/** Where one step leaves a task: finished, to be polled again (after a failure, or an upstream that missed it), or another worker's. */
export type StepOutcome =
  | { readonly _tag: "Done" }
  | { readonly _tag: "Again"; readonly failure?: PluginFailure; readonly missing?: boolean }
  | { readonly _tag: "NotOurs" }
