/**
 * Video generation as a task: `submit` places the hold and records `VideoTaskSubmitted` in one transaction; a worker
 * on any gateway instance takes due tasks under a lease in Postgres, creates the upstream task, polls it, and at the
 * end either downloads and stores the video and settles the hold from real usage (`VideoTaskCompleted` +
 * `UsageRecalculated` + `RefundIssued`, one transaction) or releases the whole hold (`VideoTaskFailed` +
 * `RefundIssued`). Because the hold resolves exactly once and the task event commits with it, a task completes or
 * fails exactly once however many workers race. A task the upstream has not finished by its deadline fails with a
 * full refund; stored content is deleted after the retention period and its expiry recorded.
 */

import { Alerts } from "./alerts/Alerts.ts"
import { Context, Effect, Layer, Queue } from "effect"
import { randomUUID } from "node:crypto"
import { GuardedFetcher } from "./ports/GuardedFetcher.ts"
import { MediaProbe } from "./ports/MediaProbe.ts"
import { evolve, type VideoTaskState, type VideoTaskSubmitted, videoStream } from "../domain/video/VideoTask.ts"
import { PluginRegistry } from "./PluginRegistry.ts"
import { ContentStore, type ContentStoreError } from "./ContentStore.ts"
import { type KnownVideoModel, type VideoTaskRow, VideoTaskStore } from "./ports/VideoTaskStore.ts"
import { type Companion, Ledger } from "./Ledger.ts"
import { OperatorConfig } from "./OperatorConfig.ts"
import type { StoreRefused, StoreUnavailable } from "./StoreErrors.ts"

import type {
  PollReport,
  SubmitError,
  SubmitVideo,
  VideoContext,
  VideoExpired,
  VideoNotFound,
  VideoNotReady,
  VideoWorkerOptions,
  decidedEvents
} from "./video/VideoTaskParts.ts"
import { makeVideoSubmit } from "./video/VideoSubmit.ts"
import { makeVideoWorker } from "./video/VideoWorker.ts"

export {
  MISSING_POLLS_BEFORE_FAILING,
  VideoExpired,
  VideoNotFound,
  VideoNotReady,
  defaultVideoWorkerOptions
} from "./video/VideoTaskParts.ts"
export type {
  PollReport,
  SubmitError,
  SubmitVideo,
  VideoContext,
  VideoWorkerOptions,
  WorkerError
} from "./video/VideoTaskParts.ts"

export class VideoTasks extends Context.Service<
  VideoTasks,
  {
    /** Places the hold and records the task (once per Idempotency-Key). `replayed`: an earlier submit's task. */
    readonly submit: (
      input: SubmitVideo
    ) => Effect.Effect<{ readonly task: VideoTaskState; readonly replayed: boolean }, SubmitError>
    readonly get: (accountId: string, id: string) => Effect.Effect<VideoTaskRow, VideoNotFound | StoreUnavailable>
    readonly list: (
      accountId: string,
      options: { readonly limit: number; readonly after: string | undefined; readonly order: "asc" | "desc" }
    ) => Effect.Effect<{ readonly rows: ReadonlyArray<VideoTaskRow>; readonly hasMore: boolean }, StoreUnavailable>
    /** The stored file of a completed task: its key and size, or why there is none. */
    readonly content: (
      accountId: string,
      id: string
    ) => Effect.Effect<
      { readonly key: string; readonly size: number },
      VideoNotFound | VideoNotReady | VideoExpired | StoreUnavailable | ContentStoreError
    >
    /** One worker round: claims due tasks and advances each one step. */
    readonly pollDue: Effect.Effect<PollReport, StoreUnavailable | StoreRefused>
    /** Deletes content past its retention and records `VideoContentExpired`; returns how many. */
    readonly sweepExpiredContent: Effect.Effect<number, StoreUnavailable>
    /** This instance's worker id (lease owner). */
    readonly workerId: string
  }
>()("tollgate/app/VideoTasks") {
  static readonly layerWith = (options: VideoWorkerOptions) =>
    Layer.effect(
      VideoTasks,
      Effect.gen(function* () {
        const store = yield* VideoTaskStore
        const ledger = yield* Ledger
        const registry = yield* PluginRegistry
        const contents = yield* ContentStore
        const config = yield* OperatorConfig
        const fetcher = yield* GuardedFetcher
        const media = yield* MediaProbe
        const workerId = `worker-${randomUUID()}`
        const pollIntervalMs = config.video.pollIntervalMs
        const deadlineMs = config.video.deadlineMinutes * 60_000
        const retentionMs = config.video.retentionDays * 86_400_000
        const kicks = yield* Queue.sliding<void>(1)
        // The catalog is fixed for the life of the layer: what this worker can follow, for the claim's filter.
        const known: ReadonlyArray<KnownVideoModel> = config.models.flatMap((configured) => {
          const entry = registry.resolve(configured.id)
          return entry?.kind === "videos"
            ? [{ model: entry.model.id, upstreams: entry.model.upstreams.map((upstream) => upstream.name) }]
            : []
        })

        const companion = (
          state: VideoTaskState | undefined,
          taskEvents: ReadonlyArray<VideoTaskSubmitted | ReturnType<typeof decidedEvents>[number]>
        ): { companion: Companion; next: VideoTaskState } => {
          const next = taskEvents.reduce<VideoTaskState | undefined>(evolve, state) as VideoTaskState
          return {
            next,
            companion: {
              stream: videoStream(next.taskId),
              expected: state === undefined ? "no_stream" : state.version,
              events: taskEvents,
              projection: store.projection(next)
            }
          }
        }

        const context: VideoContext = {
          store,
          ledger,
          registry,
          contents,
          config,
          fetcher,
          media,
          alerts: yield* Alerts,
          options,
          workerId,
          pollIntervalMs,
          deadlineMs,
          retentionMs,
          kicks,
          known,
          companion
        }
        const { submit, get, list, content } = makeVideoSubmit(context)
        const { pollDue, sweepExpiredContent } = yield* makeVideoWorker(context)
        return VideoTasks.of({ submit, get, list, content, pollDue, sweepExpiredContent, workerId })
      })
    )
}
