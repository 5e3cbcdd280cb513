/**
 * Video generation as a task: `submit` places the hold and records `VideoTaskSubmitted` in one transaction; a worker
 * on any gateway instance takes due tasks under a lease in Postgres, creates the upstream task, polls it, and at the
 * end either downloads and stores the video and settles the hold from real usage (`VideoTaskCompleted` +
 * `UsageRecalculated` + `RefundIssued`, one transaction) or releases the whole hold (`VideoTaskFailed` +
 * `RefundIssued`). Because the hold resolves exactly once and the task event commits with it, a task completes or
 * fails exactly once however many workers race. A task the upstream has not finished by its deadline fails with a
 * full refund; stored content is deleted after the retention period and its expiry recorded.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Queue, Result, Schedule, Schema } from "effect"
import { createHash, randomUUID } from "node:crypto"
import { GuardedFetcher } from "./ports/GuardedFetcher.ts"
import { MediaProbe } from "./ports/MediaProbe.ts"
import { formatMicros } from "../domain/Money.ts"
import {
  decide,
  evolve,
  type VideoCommand,
  type VideoTaskState,
  type VideoTaskSubmitted,
  videoStream
} from "../domain/video/VideoTask.ts"
import { pixelSize, type VideoRequest, videoTokens } from "../domain/video/VideoSpec.ts"
import {
  type PluginFailure,
  type PluginModel,
  pluginFailure,
  type VideosPlugin,
  type VideoUpstreamStatus,
  type VideoUsage
} from "../plugins/ModelPlugin.ts"
import { PluginRegistry, wrongEndpointMessage } from "./PluginRegistry.ts"
import { VIDEO_LINK_REFUSED } from "../plugins/video/LinkDownload.ts"
import type { CancelsVideoTasks } from "../plugins/video/VideoPlugin.ts"
import {
  InvalidChatRequest,
  ModelNotAllowed,
  ModelNotFound,
  type UpstreamFailed,
  upstreamFailed
} from "./ChatErrors.ts"
import { ContentStore, type ContentStoreError, type ContentTooLarge } from "./ContentStore.ts"
import { type KnownVideoModel, type VideoTaskRow, VideoTaskStore } from "./ports/VideoTaskStore.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { type Companion, Ledger } from "./Ledger.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import { OperatorConfig } from "./OperatorConfig.ts"
import {
  IdempotencyConflict,
  type StoreRefused,
  type StoreUnavailable,
  type StreamVersionConflict
} from "./StoreErrors.ts"
import { traced } from "./Traced.ts"
import { checkVideoInputLinks } from "./VideoInputLinks.ts"

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

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")

/** A deterministic id per (account, Idempotency-Key), so a retried submit finds the task the first one created. */
const taskIdFor = (accountId: string, idempotencyKey: string | null): string =>
  `video_${idempotencyKey === null ? randomUUID().replaceAll("-", "") : sha256(`${accountId}\u0000${idempotencyKey}`).slice(0, 32)}`

/** The hold's id (a uuid) derived from the task id: one hold per task, found again from the task alone. */
const holdIdFor = (taskId: string): string => {
  const h = sha256(`hold:${taskId}`)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}

const contentKeyFor = (taskId: string) => `videos/${taskId}.mp4`

/** Back-off after an upstream failure: the poll interval doubled per failure, capped at five minutes. */
const backoffMillis = (intervalMs: number, failures: number, retryAfterSeconds: number | undefined) =>
  Math.max(Math.min(intervalMs * 2 ** Math.min(failures, 8), 300_000), (retryAfterSeconds ?? 0) * 1000)

const isRetryable = (failure: PluginFailure) =>
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
const UPSTREAM_TASK_MISSING = "upstream_task_missing"

/**
 * A poll's answer that the upstream does not know the task: a 404 failure, or the built-in plugin's mapping of one
 * (a `Failed` status with the code above). Undefined for any other answer.
 */
const missingUpstreamTask = (polled: Result.Result<VideoUpstreamStatus, PluginFailure>): PluginFailure | undefined => {
  if (Result.isFailure(polled)) return polled.failure.reason === "not_found" ? polled.failure : undefined
  const status = polled.success
  return status._tag === "Failed" && status.code === UPSTREAM_TASK_MISSING
    ? pluginFailure("not_found", status.message, { code: UPSTREAM_TASK_MISSING })
    : undefined
}

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

        // -------------------------------------------------------------------------------------------------------
        // Submit

        const resolveVideoModel = (key: AuthenticatedKey, modelId: string) =>
          Effect.gen(function* () {
            const entry = registry.resolve(modelId)
            if (entry === undefined) return yield* new ModelNotFound({ model: modelId })
            if (key.models !== null && !key.models.includes(modelId)) {
              return yield* new ModelNotAllowed({ model: modelId })
            }
            if (entry.kind !== "videos") {
              return yield* new InvalidChatRequest({
                param: "model",
                message: wrongEndpointMessage(modelId, entry, "POST /v1/videos")
              })
            }
            return { plugin: entry.plugin, model: entry.model }
          })

        const submit = Effect.fnUntraced(function* (input: SubmitVideo) {
          const { plugin, model } = yield* resolveVideoModel(input.key, input.model)
          const refusal = plugin.check?.(input.request, model)
          if (refusal !== undefined) return yield* upstreamFailed(refusal)
          // Last of the checks (it waits on the network), before anything is held or recorded.
          yield* checkVideoInputLinks(fetcher, input.request)
          const accountId = input.key.accountId
          const taskId = taskIdFor(accountId, input.idempotencyKey)
          const requestHash = sha256(JSON.stringify({ model: input.model, request: input.request }))
          const nowMs = yield* Clock.currentTimeMillis
          const amount = plugin.pricing.estimate(input.request, model)
          const submitted: VideoTaskSubmitted = {
            type: "VideoTaskSubmitted",
            data: {
              taskId,
              accountId,
              keyId: input.key.keyId,
              model: model.id,
              plugin: plugin.id,
              holdId: holdIdFor(taskId),
              held: formatMicros(amount),
              estimatedTokens: videoTokens(
                pixelSize(input.request.resolution, input.request.ratio),
                input.request.seconds
              ).toString(),
              request: input.request,
              idempotencyKey: input.idempotencyKey,
              requestHash,
              requestId: input.requestId,
              deadlineAt: new Date(nowMs + deadlineMs).toISOString(),
              at: new Date(nowMs).toISOString()
            }
          }
          const { companion: withTask, next } = companion(undefined, [submitted])
          const placed = yield* ledger
            .placeHoldWith(
              {
                accountId,
                holdId: submitted.data.holdId,
                amount,
                keyId: input.key.keyId,
                keySpendLimit: input.key.spendLimit,
                model: model.id,
                plugin: plugin.id,
                requestId: input.requestId,
                // The task's deadline governs this hold, not the request-hold TTL.
                ttlSeconds: null
              },
              withTask
            )
            .pipe(
              Effect.as(Option.none<VideoTaskState>()),
              Effect.catchTag("StreamVersionConflict", () =>
                // The task exists: a retry with the same Idempotency-Key. Same body → the same task, held once.
                Effect.flatMap(store.load(taskId), (existing) =>
                  existing === undefined
                    ? Effect.die(`task ${taskId} conflicted but has no events`)
                    : existing.requestHash === requestHash
                      ? Effect.succeed(Option.some(existing))
                      : Effect.fail(new IdempotencyConflict({ key: input.idempotencyKey ?? taskId }))
                )
              )
            )
          if (Option.isSome(placed)) return { task: placed.value, replayed: true }
          yield* Queue.offer(kicks, undefined)
          return { task: next, replayed: false }
        }, traced("VideoTasks.submit"))

        // -------------------------------------------------------------------------------------------------------
        // Reads

        const get = (accountId: string, id: string) =>
          Effect.flatMap(store.find(accountId, id), (row) =>
            row === undefined ? Effect.fail(new VideoNotFound({ id })) : Effect.succeed(row)
          )

        const list = (
          accountId: string,
          page: { readonly limit: number; readonly after: string | undefined; readonly order: "asc" | "desc" }
        ) =>
          Effect.map(store.list(accountId, page), (rows) => ({
            rows: rows.slice(0, page.limit),
            hasMore: rows.length > page.limit
          }))

        const content = (accountId: string, id: string) =>
          Effect.gen(function* () {
            const row = yield* get(accountId, id)
            if (row.status !== "completed" || row.content === null) {
              return yield* new VideoNotReady({ id, status: row.status })
            }
            const now = yield* Clock.currentTimeMillis
            if (row.content_expired_at !== null || (row.expires_at !== null && row.expires_at.getTime() <= now)) {
              return yield* new VideoExpired({
                id,
                expiredAt: (row.content_expired_at ?? row.expires_at)?.toISOString() ?? ""
              })
            }
            const stored = yield* contents.stat(row.content.key)
            if (stored === undefined) {
              return yield* new VideoExpired({ id, expiredAt: new Date(now).toISOString() })
            }
            return { key: row.content.key, size: stored.size }
          })

        // -------------------------------------------------------------------------------------------------------
        // Worker

        /** Appends a decision's events for a task (no money moves): dispatch, progress, content expiry. */
        const record = (state: VideoTaskState, command: VideoCommand) =>
          Effect.gen(function* () {
            const decision = decide(state, command)
            if (decision._tag === "Rejected") return state
            const next = decision.events.reduce<VideoTaskState | undefined>(evolve, state) as VideoTaskState
            yield* store.append(
              state,
              decision.events,
              next,
              { actor: workerId },
              new Date(yield* Clock.currentTimeMillis)
            )
            return next
          })

        /** Fails the task and refunds the whole hold, in one transaction. */
        const failTask = (
          state: VideoTaskState,
          reason: "failed" | "cancelled" | "expired",
          code: string,
          message: string
        ) =>
          Effect.gen(function* () {
            const at = new Date(yield* Clock.currentTimeMillis).toISOString()
            const decision = decide(state, { type: "Fail", reason, code, message, at })
            if (decision._tag === "Rejected") return
            const { companion: withTask } = companion(state, decidedEvents(decision))
            yield* ledger.releaseWith(state.accountId, state.holdId, reason, withTask)
            yield* Effect.logInfo("video task failed").pipe(Effect.annotateLogs({ taskId: state.taskId, code }))
          })

        /** Downloads and stores the result, measures it, and settles the hold from real usage, in one transaction. */
        const completeTask = (
          state: VideoTaskState,
          plugin: VideosPlugin,
          model: PluginModel,
          ref: Parameters<VideosPlugin["poll"]>[0],
          videoUrl: string,
          completionTokens: number | null
        ) =>
          Effect.gen(function* () {
            const key = contentKeyFor(state.taskId)
            const download = yield* plugin.download(ref, videoUrl)
            const stored = yield* contents.put(key, download.body, options.maxContentBytes)
            const bytes = yield* contents.head(key, stored.size)
            const info = media.video(bytes)
            if (info._tag === "Unreadable") {
              yield* contents.remove(key)
              return yield* failTask(
                state,
                "failed",
                "invalid_upstream_video",
                `the upstream delivered a file that is not a readable MP4 (${info.message})`
              )
            }
            const usage: VideoUsage =
              completionTokens === null ? info.usage : { tokens: BigInt(completionTokens), reported: true }
            const cost = plugin.pricing.price(usage, model)
            const nowMs = yield* Clock.currentTimeMillis
            const decision = decide(state, {
              type: "Complete",
              tokens: usage.tokens,
              tokensReported: usage.reported,
              cost: formatMicros(cost),
              content: {
                key,
                bytes: stored.size,
                contentType: "video/mp4",
                width: info.width,
                height: info.height,
                durationMs: Math.round(info.durationSeconds * 1000),
                hasAudio: info.hasAudio
              },
              expiresAt: new Date(nowMs + retentionMs).toISOString(),
              at: new Date(nowMs).toISOString()
            })
            if (decision._tag === "Rejected") return
            const { companion: withTask } = companion(state, decidedEvents(decision))
            yield* ledger.settleWith(
              state.accountId,
              state.holdId,
              cost,
              // Seconds delivered (the usage report's video seconds), not asked for.
              {
                videoTokens: usage.tokens.toString(),
                reported: usage.reported,
                seconds: Math.round(info.durationSeconds)
              },
              withTask
            )
            yield* Effect.logInfo("video task completed").pipe(
              Effect.annotateLogs({ taskId: state.taskId, cost: formatMicros(cost) })
            )
          })

        /**
         * `Again`: come back after the poll interval, or after a back-off when `failure` is set (`missing`: the
         * upstream answered 404 for the task). `NotOurs`: this catalog cannot follow the task (its model, or the
         * upstream that took it, is not configured here): the lease is given up at once for an instance that can.
         */
        type StepOutcome =
          | { readonly _tag: "Done" }
          | { readonly _tag: "Again"; readonly failure?: PluginFailure; readonly missing?: boolean }
          | { readonly _tag: "NotOurs" }

        /**
         * Keeps the task's lease for this worker until `until`, if nobody took it over since this worker claimed it
         * (a lease that ran out but was not claimed again is still ours). Atomic against `claimDueTasks`: either
         * the other instance's claim lands first and this answers false, or this lands first and the claim, which
         * only takes leases past their end, skips the task until `until`.
         */
        const keepLease = (taskId: string, until: Date) =>
          Effect.map(store.keepLease(taskId, workerId, until), (kept) => kept)

        /**
         * Runs one step of a task while renewing this worker's lease every third of `leaseMillis` (at most every
         * 250 ms), never shortening it (the create step extends it further on its own). A renewal that fails is only
         * logged: the step's own version checks keep a second worker from recording anything twice.
         */
        const whileLeased = <A, E, R>(taskId: string, work: Effect.Effect<A, E, R>) => {
          const renew = Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            const until = new Date(now + options.leaseMillis)
            yield* store.extendLease(taskId, workerId, until)
          }).pipe(Effect.catch((error) => Effect.logWarning("could not renew a video task lease", error.message)))
          const every = Duration.millis(Math.max(250, Math.floor(options.leaseMillis / 3)))
          return Effect.raceFirst(work, Effect.sleep(every).pipe(Effect.andThen(renew), Effect.forever))
        }

        /**
         * Creates the upstream task and records it (`VideoTaskDispatched`). Unlike every other step this one cannot be
         * repeated harmlessly: a second create is a second upstream video, billed by the vendor and never followed.
         * Polling leases alone do not prevent that (a lease can run out mid-step, and a 1 ms lease makes every round
         * a race), so the create is guarded in layers:
         * 1. Exclusion: the lease is confirmed as still this worker's and extended over the whole create (every
         *    upstream's timeout, plus the lease, capped at the task's deadline), so no other instance can claim the
         *    task while it runs. The price: a worker that dies mid-create holds the task that long.
         * 2. Fresh state: the stream is read again under that lease; if it moved (another worker dispatched, or the
         *    task ended) nothing is created.
         * 3. Idempotency: the plugin sends a key derived from the task id where the protocol takes one
         *    (`openai-videos`), so a create retried after a worker died mid-call returns the same upstream task.
         * 4. Conditional record: the dispatch is appended at the version read in (2). If it loses anyway (a create
         *    that outlasted the extended lease), the upstream task just made is an orphan unless the winner recorded
         *    the very same one; it is cancelled where the protocol allows it (ark: DELETE of a queued task;
         *    openai-videos: DELETE of the video), and logged otherwise.
         */
        const dispatch = (
          claimed: VideoTaskState,
          plugin: VideosPlugin,
          call: Parameters<VideosPlugin["create"]>[0],
          now: number
        ) =>
          Effect.gen(function* () {
            // Never past the deadline: a worker that dies mid-create must not keep the task from being failed then.
            const budgetMs = options.leaseMillis + call.model.upstreams.reduce((sum, u) => sum + u.timeoutMs, 0)
            const until = Math.min(now + budgetMs, new Date(claimed.deadlineAt).getTime())
            if (!(yield* keepLease(claimed.taskId, new Date(until)))) {
              return { _tag: "Again" } as StepOutcome
            }
            const state = yield* store.load(claimed.taskId)
            if (state === undefined || state.version !== claimed.version || state.upstream !== null) {
              return { _tag: "Again" } as StepOutcome
            }
            const created = yield* Effect.result(plugin.create(call))
            if (created._tag === "Failure") {
              if (isRetryable(created.failure)) return { _tag: "Again", failure: created.failure } as StepOutcome
              yield* failTask(state, "failed", created.failure.code ?? "upstream_rejected", created.failure.message)
              return { _tag: "Done" } as StepOutcome
            }
            const { upstreamTaskId, upstreamIndex } = created.success
            const upstreamName = call.model.upstreams[upstreamIndex]?.name
            yield* record(state, {
              type: "Dispatch",
              upstreamTaskId,
              upstreamIndex,
              ...(upstreamName === undefined ? {} : { upstreamName }),
              at: new Date(now).toISOString()
            }).pipe(
              Effect.catchTag("StreamVersionConflict", () =>
                Effect.gen(function* () {
                  const latest = yield* store.load(state.taskId)
                  const same = latest?.upstream?.taskId === upstreamTaskId && latest.upstream.index === upstreamIndex
                  if (same) return
                  yield* cancelOrphan(plugin, { ...call, upstreamTaskId, upstreamIndex })
                })
              )
            )
            return { _tag: "Again" } as StepOutcome
          })

        /** Best effort: an orphan that cannot be cancelled is only logged (with its id, for the operator). */
        const cancelOrphan = (plugin: VideosPlugin, ref: Parameters<VideosPlugin["poll"]>[0]) => {
          const cancel = (plugin as Partial<CancelsVideoTasks>).cancel
          const annotations = { taskId: ref.taskId, upstreamTaskId: ref.upstreamTaskId }
          if (cancel === undefined) {
            return Effect.logWarning("orphaned upstream video task: the plugin cannot cancel it").pipe(
              Effect.annotateLogs(annotations)
            )
          }
          return cancel(ref).pipe(
            Effect.andThen(Effect.logInfo("cancelled an orphaned upstream video task")),
            Effect.catch((failure) =>
              Effect.logWarning("could not cancel an orphaned upstream video task", failure.message)
            ),
            Effect.annotateLogs(annotations)
          )
        }

        /**
         * Where this catalog has the upstream that took the task: by the recorded name (instances may list a model's
         * upstreams in other orders), else (a task dispatched before names were recorded) by the recorded index.
         * Undefined when it has no such upstream.
         */
        const localUpstreamIndex = (
          upstream: NonNullable<VideoTaskState["upstream"]>,
          model: PluginModel
        ): number | undefined => {
          const index =
            upstream.name === undefined
              ? upstream.index
              : model.upstreams.findIndex((candidate) => candidate.name === upstream.name)
          return index >= 0 && index < model.upstreams.length ? index : undefined
        }

        /**
         * One step of one task; answers whether it is finished or when to come back. `missingPolls`: the polls in a
         * row before this one that the upstream answered 404.
         */
        const step = (state: VideoTaskState, missingPolls: number) =>
          Effect.gen(function* () {
            const now = yield* Clock.currentTimeMillis
            if (now >= new Date(state.deadlineAt).getTime()) {
              yield* failTask(
                state,
                "expired",
                "deadline_exceeded",
                `the upstream did not finish this video within ${config.video.deadlineMinutes} minutes; the charge was refunded in full`
              )
              return { _tag: "Done" } as StepOutcome
            }
            // Another instance's task (the claim filters these out; a changed config is the only way here): left
            // alone, never failed. Its deadline still fails it, on whichever instance claims it then.
            const entry = registry.resolve(state.model)
            if (entry === undefined || entry.kind !== "videos") return { _tag: "NotOurs" } as StepOutcome
            const { plugin, model } = entry
            const request: VideoRequest = {
              prompt: state.prompt,
              seconds: state.seconds,
              resolution: state.resolution,
              ratio: state.ratio,
              inputType: state.inputType,
              images: state.images,
              videos: state.videos
            }
            const call = { model, request, taskId: state.taskId, signal: new AbortController().signal }
            if (state.upstream === null) return yield* dispatch(state, plugin, call, now)
            const upstreamIndex = localUpstreamIndex(state.upstream, model)
            if (upstreamIndex === undefined) return { _tag: "NotOurs" } as StepOutcome
            const ref = { ...call, upstreamTaskId: state.upstream.taskId, upstreamIndex }
            const polled = yield* Effect.result(plugin.poll(ref))
            const missing = missingUpstreamTask(polled)
            if (missing !== undefined) {
              const inARow = missingPolls + 1
              if (inARow >= MISSING_POLLS_BEFORE_FAILING) {
                yield* failTask(
                  state,
                  "expired",
                  UPSTREAM_TASK_MISSING,
                  `${missing.message} (${inARow} polls in a row); the charge was refunded in full`
                )
                return { _tag: "Done" } as StepOutcome
              }
              yield* Effect.logWarning("the upstream does not know a video task; polling it again").pipe(
                Effect.annotateLogs({ taskId: state.taskId, upstreamTaskId: state.upstream.taskId, inARow })
              )
              return { _tag: "Again", failure: missing, missing: true } as StepOutcome
            }
            if (polled._tag === "Failure") return { _tag: "Again", failure: polled.failure } as StepOutcome
            const status = polled.success
            switch (status._tag) {
              case "Pending":
                yield* record(state, {
                  type: "ReportProgress",
                  status: status.status,
                  progress: status.progress,
                  at: new Date(now).toISOString()
                })
                return { _tag: "Again" } as StepOutcome
              case "Failed":
                yield* failTask(state, status.reason, status.code, status.message)
                return { _tag: "Done" } as StepOutcome
              case "Succeeded": {
                const done = yield* Effect.result(
                  completeTask(state, plugin, model, ref, status.videoUrl, status.completionTokens)
                )
                if (done._tag === "Success") return { _tag: "Done" } as StepOutcome
                const error = done.failure
                // The guard refused the vendor's link (a private address): no retry can change that.
                if (error._tag === "PluginFailure" && error.code === VIDEO_LINK_REFUSED) {
                  yield* failTask(
                    state,
                    "failed",
                    VIDEO_LINK_REFUSED,
                    `${error.message}; the charge was refunded in full`
                  )
                  return { _tag: "Done" } as StepOutcome
                }
                if (error._tag === "PluginFailure") return { _tag: "Again", failure: error } as StepOutcome
                if (error._tag === "ContentTooLarge") {
                  yield* failTask(state, "failed", "video_too_large", `the video exceeds ${error.limit} bytes`)
                  return { _tag: "Done" } as StepOutcome
                }
                return yield* Effect.fail(error)
              }
            }
          })

        const advance = (taskId: string, failures: number, missingPolls: number) =>
          Effect.gen(function* () {
            const state = yield* store.load(taskId)
            if (state === undefined || state.status === "completed" || state.status === "failed") {
              yield* store.dropLease(taskId)
              return "gone" as const
            }
            const outcome = yield* whileLeased(taskId, step(state, missingPolls)).pipe(
              // A lost race (another worker moved the task or resolved its hold): come back and read again.
              Effect.catchTag("StreamVersionConflict", () => Effect.succeed({ _tag: "Again" } as StepOutcome)),
              Effect.catchTag("LedgerRejected", () => Effect.succeed({ _tag: "Again" } as StepOutcome)),
              Effect.catchTag("ContentStoreError", (error) =>
                Effect.as(Effect.logWarning("video content store failed", error.message), {
                  _tag: "Again",
                  failure: { _tag: "PluginFailure", reason: "overloaded", message: error.message }
                } as StepOutcome)
              )
            )
            const now = yield* Clock.currentTimeMillis
            if (outcome._tag === "Done") {
              yield* store.dropLease(taskId)
              const after = yield* store.load(taskId)
              return after?.status === "completed" ? ("completed" as const) : ("failed" as const)
            }
            if (outcome._tag === "NotOurs") {
              // Due again at once, counts kept: the instance whose catalog has the task claims it next.
              yield* store.reschedule(taskId, workerId, new Date(now), failures, missingPolls)
              return "pending" as const
            }
            const nextFailures = outcome.failure === undefined ? 0 : failures + 1
            // 404s in a row: another 404 counts on, an answer about the task resets it, an outage leaves it.
            const nextMissing =
              outcome.missing === true ? missingPolls + 1 : outcome.failure === undefined ? 0 : missingPolls
            const wait =
              outcome.failure === undefined
                ? pollIntervalMs
                : backoffMillis(pollIntervalMs, failures, outcome.failure.retryAfterSeconds)
            yield* store.reschedule(taskId, workerId, new Date(now + wait), nextFailures, nextMissing)
            return "pending" as const
          })

        const pollDue = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const claimed = yield* store.claimDue(
            workerId,
            new Date(now),
            new Date(now + options.leaseMillis),
            options.batch,
            known
          )
          const results = yield* Effect.forEach(
            claimed,
            (lease) => advance(lease.task_id, lease.failures, lease.missing_polls),
            {
              concurrency: 4
            }
          )
          return {
            claimed: claimed.length,
            completed: results.filter((r) => r === "completed").length,
            failed: results.filter((r) => r === "failed").length
          }
        }).pipe(Effect.withSpan("VideoTasks.pollDue"))

        const sweepExpiredContent = Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const due = yield* store.dueContentExpiries(new Date(now), 500)
          let expired = 0
          for (const { id } of due) {
            const state = yield* store.load(id)
            if (state === undefined || state.content === null) continue
            yield* contents
              .remove(state.content.key)
              .pipe(Effect.catch((error) => Effect.logWarning("could not delete expired video content", error.message)))
            yield* record(state, { type: "ExpireContent", at: new Date(now).toISOString() }).pipe(
              Effect.catchTag("StreamVersionConflict", () => Effect.succeed(state))
            )
            expired += 1
          }
          return expired
        }).pipe(Effect.withSpan("VideoTasks.sweepExpiredContent"))

        if (options.enabled) {
          const round = pollDue.pipe(
            Effect.catch((error) =>
              Effect.as(Effect.logWarning("video worker round failed", error.message), undefined)
            ),
            Effect.catchDefect((defect) => Effect.logError("video worker round crashed", defect))
          )
          // Poll every interval, and right away when a task is submitted here.
          yield* round.pipe(
            Effect.andThen(Effect.race(Effect.sleep(Duration.millis(pollIntervalMs)), Queue.take(kicks))),
            Effect.forever,
            Effect.forkScoped
          )
          yield* sweepExpiredContent.pipe(
            Effect.catch((error) => Effect.logWarning("video content sweep failed", error.message)),
            Effect.repeat(Schedule.spaced(Duration.millis(options.sweepIntervalMillis))),
            Effect.forkScoped
          )
        }

        return VideoTasks.of({ submit, get, list, content, pollDue, sweepExpiredContent, workerId })
      })
    )
}

/** The events of an accepted task decision (rejections were handled before). */
const decidedEvents = (decision: ReturnType<typeof decide>) => (decision._tag === "Accepted" ? decision.events : [])

/** Errors a worker step can end with that the round does not absorb. */
export type WorkerError = StoreUnavailable | StreamVersionConflict | ContentStoreError | ContentTooLarge
