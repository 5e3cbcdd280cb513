/**
 * Submitting a video task and reading tasks back: the hold and `VideoTaskSubmitted` commit in one transaction, once
 * per Idempotency-Key; a replayed submit answers the earlier task.
 */
import { Clock, Effect, Option, Queue } from "effect"
import { formatMicros } from "../../domain/Money.ts"
import type { VideoTaskState, VideoTaskSubmitted } from "../../domain/video/VideoTask.ts"
import { pixelSize, videoTokens } from "../../domain/video/VideoSpec.ts"
import { upstreamFailed } from "../ChatErrors.ts"
import { IdempotencyConflict } from "../StoreErrors.ts"
import { traced } from "../Traced.ts"
import { checkVideoInputLinks } from "../VideoInputLinks.ts"

import {
  type SubmitVideo,
  type VideoContext,
  VideoExpired,
  VideoNotFound,
  VideoNotReady,
  holdIdFor,
  sha256,
  taskIdFor
} from "./VideoTaskParts.ts"

import { resolveModel } from "../HeldCall.ts"

export const makeVideoSubmit = (context: VideoContext) => {
  const { store, ledger, registry, contents, fetcher, deadlineMs, kicks, companion } = context
  const submit = Effect.fnUntraced(function* (input: SubmitVideo) {
    const { plugin, model } = yield* resolveModel(registry, "videos", input.model, input.key, "POST /v1/videos")
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

  return { submit, get, list, content }
}
