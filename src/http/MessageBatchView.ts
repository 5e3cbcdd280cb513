/**
 * A message batch as Anthropic's Message Batches API shows it (docs/api/batches.md), read from the batch replayed
 * from its events: the batch object (`processing_status`, `request_counts`, RFC 3339 times, `results_url`) and its
 * results, one JSON line per request in submit order: `succeeded` with the Messages API reply, `errored` with an
 * Anthropic error, `canceled` or `expired`.
 */
import { type BatchState, isFinished, type LineResult } from "../domain/batch/BatchJob.ts"
import { anthropicType } from "./ApiError.ts"

type ResultType = "processing" | "succeeded" | "errored" | "canceled" | "expired"

/** What became of a request (`result`: its line's), or `processing` while it may still run. */
const resultType = (state: BatchState, result: LineResult | undefined): ResultType => {
  if (result !== undefined) {
    if (result.outcome === "succeeded") return "succeeded"
    if (result.outcome === "failed") return "errored"
    if (result.outcome === "expired") return "expired"
    return state.status === "expired" ? "expired" : "canceled"
  }
  if (!isFinished(state.status)) return "processing"
  if (state.status === "expired") return "expired"
  if (state.status === "cancelled") return "canceled"
  // The batch failed (its key revoked, say) before this request ran.
  return "errored"
}

const processingStatus = (state: BatchState) =>
  isFinished(state.status) ? "ended" : state.status === "cancelling" ? "canceling" : "in_progress"

/** `base` is where the gateway is reached (scheme and host), for the absolute `results_url`. */
export const messageBatchObject = (state: BatchState, base: string) => {
  const counts = { processing: 0, succeeded: 0, errored: 0, canceled: 0, expired: 0 }
  state.customIds.forEach((_, line) => {
    counts[resultType(state, state.lines.get(line))] += 1
  })
  const ended = isFinished(state.status)
  const endedAt = state.times[state.status as "completed"] ?? null
  return {
    id: state.batchId,
    type: "message_batch",
    processing_status: processingStatus(state),
    request_counts: counts,
    ended_at: ended ? endedAt : null,
    created_at: state.createdAt,
    expires_at: state.expiresAt,
    cancel_initiated_at: state.times.cancelling ?? null,
    archived_at: null,
    results_url: ended ? `${base}/v1/messages/batches/${state.batchId}/results` : null
  }
}

const errorOf = (state: BatchState, result: LineResult | undefined) => {
  const status = result?.response?.statusCode ?? 500
  const message = result?.error?.message ?? state.message ?? "the batch ended before this request ran"
  return { type: "error", error: { type: anthropicType(status), message }, request_id: result?.requestId ?? null }
}

/** The results file: one line per request, in submit order (only once the batch has ended). */
export const messageBatchResults = (state: BatchState): string =>
  state.customIds
    .map((customId, line) => {
      const result = state.lines.get(line)
      const type = resultType(state, result)
      const body =
        type === "succeeded"
          ? { type, message: result?.response?.body }
          : type === "errored"
            ? { type, error: errorOf(state, result) }
            : { type }
      return `${JSON.stringify({ custom_id: customId, result: body })}\n`
    })
    .join("")
