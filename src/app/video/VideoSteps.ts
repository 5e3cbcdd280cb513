/**
 * The worker's steps on one task: record a decision, fail it with a full refund, complete it (download, store,
 * measure, settle), keep its lease, create its upstream task, cancel an orphan.
 */
import { Clock, Duration, Effect } from "effect"
import { formatMicros } from "../../domain/Money.ts"
import { decide, evolve, type VideoCommand, type VideoTaskState } from "../../domain/video/VideoTask.ts"
import type { PluginModel, VideosPlugin, VideoUsage } from "../../plugins/ModelPlugin.ts"
import type { CancelsVideoTasks } from "../../plugins/video/VideoPlugin.ts"

import { contentKeyFor, decidedEvents, isRetryable, type StepOutcome, type VideoContext } from "./VideoTaskParts.ts"

export const makeVideoSteps = (context: VideoContext) => {
  const { store, ledger, contents, media, alerts, workerId, retentionMs, companion, options } = context
  /** Appends a decision's events for a task (no money moves): dispatch, progress, content expiry. */
  const record = (state: VideoTaskState, command: VideoCommand) =>
    Effect.gen(function* () {
      const decision = decide(state, command)
      if (decision._tag === "Rejected") return state
      const next = decision.events.reduce<VideoTaskState | undefined>(evolve, state) as VideoTaskState
      yield* store.append(state, decision.events, next, { actor: workerId }, new Date(yield* Clock.currentTimeMillis))
      return next
    })

  /** Fails the task and refunds the whole hold, in one transaction. */
  const failTask = (state: VideoTaskState, reason: "failed" | "cancelled" | "expired", code: string, message: string) =>
    Effect.gen(function* () {
      const at = new Date(yield* Clock.currentTimeMillis).toISOString()
      const decision = decide(state, { type: "Fail", reason, code, message, at })
      if (decision._tag === "Rejected") return
      const { companion: withTask } = companion(state, decidedEvents(decision))
      yield* ledger.releaseWith(state.accountId, state.holdId, reason, withTask)
      yield* Effect.logInfo("video task failed").pipe(Effect.annotateLogs({ taskId: state.taskId, code }))
      if (reason !== "cancelled") {
        yield* alerts.raise({
          key: `video.failed:${state.taskId}`,
          type: "video.failed",
          accountId: state.accountId,
          data: { accountId: state.accountId, videoId: state.taskId, model: state.model, code, message }
        })
      }
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
      Effect.catch((failure) => Effect.logWarning("could not cancel an orphaned upstream video task", failure.message)),
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

  return { record, failTask, completeTask, keepLease, whileLeased, dispatch, cancelOrphan, localUpstreamIndex }
}
