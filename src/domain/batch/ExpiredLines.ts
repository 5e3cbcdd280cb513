/**
 * The lines an expired batch never finished, as OpenAI's Batch API reports them: each one in the error file with
 * `response: null` and the error `batch_expired`, and counted as failed. They are results of the batch's ending
 * (`BatchEnded` with `expired`), not events of their own: a batch of 50,000 lines expires in one event.
 */
import { formatMicros } from "../Money.ts"
import type { BatchEnding, BatchState, LineResult } from "./BatchJob.ts"

/** The request id of a line: its hold's, its usage record's and its output line's, so the three join. */
export const lineRequestId = (batchId: string, line: number): string => `${batchId}/${line}`

export const BATCH_EXPIRED = {
  code: "batch_expired",
  message: "This request could not be executed before the completion window expired."
} as const

/** Line `line`'s result when the batch's window ran out before it finished; `holdId` the hold it started under. */
export const expiredLine = (state: BatchState, line: number, holdId: string | null): LineResult => ({
  line,
  customId: state.customIds[line] ?? "",
  outcome: "expired",
  holdId,
  cost: formatMicros(0n),
  requestId: lineRequestId(state.batchId, line),
  response: null,
  error: BATCH_EXPIRED
})

/** `state` with every line it has no result for expired (and counted failed). */
export const expireUnfinished = (state: BatchState): BatchState => {
  const lines = new Map(state.lines)
  state.customIds.forEach((_, line) => {
    if (!lines.has(line)) lines.set(line, expiredLine(state, line, state.started.get(line) ?? null))
  })
  return { ...state, lines, failed: state.failed + (lines.size - state.lines.size) }
}

/** The lines a batch ending `ending` has results for: an expired batch's include every line it never finished. */
export const linesAtEnd = (state: BatchState, ending: BatchEnding): BatchState =>
  ending === "expired" ? expireUnfinished(state) : state
