/**
 * The video worker: each round claims due tasks under a lease and advances each one step (create, poll, complete
 * or fail), and a slower loop deletes content past its retention. Runs on every instance; leases keep two instances
 * from doing one step twice.
 */
import { Clock, Duration, Effect, Queue, Schedule } from "effect"
import type { VideoTaskState } from "../../domain/video/VideoTask.ts"
import type { VideoRequest } from "../../domain/video/VideoSpec.ts"
import type {
  PluginFailure,
  PluginModel,
  VideosPlugin,
  VideoTaskRef,
  VideoUpstreamStatus
} from "../../plugins/ModelPlugin.ts"
import { VIDEO_LINK_REFUSED } from "../../plugins/video/LinkDownload.ts"

import {
  MISSING_POLLS_BEFORE_FAILING,
  UPSTREAM_TASK_MISSING,
  type VideoContext,
  backoffMillis,
  missingUpstreamTask,
  type StepOutcome
} from "./VideoTaskParts.ts"
import { makeVideoSteps } from "./VideoSteps.ts"

/** The poll of an instance whose catalog has no video model: only deadlines to enforce. */
const IDLE_VIDEO_POLL_MS = 60_000

export const makeVideoWorker = (context: VideoContext) =>
  Effect.gen(function* () {
    const { store, registry, contents, config, workerId, pollIntervalMs, kicks, known, options } = context
    const { record, failTask, completeTask, whileLeased, dispatch, localUpstreamIndex } = makeVideoSteps(context)
    const done = { _tag: "Done" } as StepOutcome

    /** The upstream said it does not know the task: failed after enough such polls in a row, else polled again. */
    const whenMissing = (state: VideoTaskState, missing: PluginFailure, missingPolls: number) =>
      Effect.gen(function* () {
        const inARow = missingPolls + 1
        if (inARow >= MISSING_POLLS_BEFORE_FAILING) {
          yield* failTask(
            state,
            "expired",
            UPSTREAM_TASK_MISSING,
            `${missing.message} (${inARow} polls in a row); the charge was refunded in full`
          )
          return done
        }
        yield* Effect.logWarning("the upstream does not know a video task; polling it again").pipe(
          Effect.annotateLogs({ taskId: state.taskId, upstreamTaskId: state.upstream?.taskId, inARow })
        )
        return { _tag: "Again", failure: missing, missing: true } as StepOutcome
      })

    /** The video is ready: stored and billed, or failed for good when no retry can help, or tried again. */
    const whenSucceeded = (
      state: VideoTaskState,
      plugin: VideosPlugin,
      model: PluginModel,
      ref: VideoTaskRef,
      status: Extract<VideoUpstreamStatus, { readonly _tag: "Succeeded" }>
    ) =>
      Effect.gen(function* () {
        const completed = yield* Effect.result(
          completeTask(state, plugin, model, ref, status.videoUrl, status.completionTokens)
        )
        if (completed._tag === "Success") return done
        const error = completed.failure
        // The guard refused the vendor's link (a private address): no retry can change that.
        if (error._tag === "PluginFailure" && error.code === VIDEO_LINK_REFUSED) {
          yield* failTask(state, "failed", VIDEO_LINK_REFUSED, `${error.message}; the charge was refunded in full`)
          return done
        }
        if (error._tag === "PluginFailure") return { _tag: "Again", failure: error } as StepOutcome
        if (error._tag === "ContentTooLarge") {
          yield* failTask(state, "failed", "video_too_large", `the video exceeds ${error.limit} bytes`)
          return done
        }
        return yield* Effect.fail(error)
      })

    /** What the upstream's status means for the task: progress recorded, failed, or completed. */
    const whenPolled = (
      state: VideoTaskState,
      plugin: VideosPlugin,
      model: PluginModel,
      ref: VideoTaskRef,
      status: VideoUpstreamStatus,
      now: number
    ) => {
      switch (status._tag) {
        case "Pending":
          return Effect.as(
            record(state, {
              type: "ReportProgress",
              status: status.status,
              progress: status.progress,
              at: new Date(now).toISOString()
            }),
            { _tag: "Again" } as StepOutcome
          )
        case "Failed":
          return Effect.as(failTask(state, status.reason, status.code, status.message), done)
        case "Succeeded":
          return whenSucceeded(state, plugin, model, ref, status)
      }
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
          return done
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
        if (missing !== undefined) return yield* whenMissing(state, missing, missingPolls)
        if (polled._tag === "Failure") return { _tag: "Again", failure: polled.failure } as StepOutcome
        return yield* whenPolled(state, plugin, model, ref, polled.success, now)
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
        Effect.catch((error) => Effect.as(Effect.logWarning("video worker round failed", error.message), undefined)),
        Effect.catchDefect((defect) => Effect.logError("video worker round crashed", defect))
      )
      // Poll every interval, and right away when a task is submitted here. Without a video model in the catalog this
      // instance only fails tasks past their deadline (minutes away), so it asks once a minute at most.
      const every = known.length === 0 ? Math.max(pollIntervalMs, IDLE_VIDEO_POLL_MS) : pollIntervalMs
      yield* round.pipe(
        Effect.andThen(Effect.race(Effect.sleep(Duration.millis(every)), Queue.take(kicks))),
        Effect.forever,
        Effect.forkScoped
      )
      yield* sweepExpiredContent.pipe(
        Effect.catch((error) => Effect.logWarning("video content sweep failed", error.message)),
        Effect.repeat(Schedule.spaced(Duration.millis(options.sweepIntervalMillis))),
        Effect.forkScoped
      )
    }

    return { pollDue, sweepExpiredContent }
  })
