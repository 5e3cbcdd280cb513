/**
 * One claim's worth of a batch's lines, `concurrency` at a time, yielding to interactive traffic: each line is admitted
 * under its key's rate limits as an interactive call of that key would be (a slot while it runs; its tokens counted
 * when it settles), and its call takes only the batch's share of each deployment (`RouteHint.batchSharePercent`, set
 * on the worker's line services). Once a line has to wait — its key at a limit, or every deployment at its limits or
 * its batch share — the lines not yet started wait too, for a later round.
 */
import { Clock, Effect, Semaphore } from "effect"
import type { InputLine } from "../../domain/batch/BatchInput.ts"
import type { BatchState } from "../../domain/batch/BatchJob.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import type { BatchStore } from "../ports/BatchStore.ts"
import type { RateLimiter } from "../RateLimiter.ts"
import type { makeCommits } from "./BatchCommits.ts"
import { countingTokens, type LineServices, runLine } from "./BatchLineRun.ts"

export interface ChunkContext {
  readonly store: BatchStore["Service"]
  readonly services: LineServices
  readonly limiter: RateLimiter["Service"]
  readonly options: { readonly leaseMillis: number; readonly concurrency: number }
  readonly workerId: string
  readonly commits: Pick<ReturnType<typeof makeCommits>, "start" | "finish">
}

/** Runs the lines `chunk` of `state` with `key`; true when some had to wait. */
export const runChunk = (
  context: ChunkContext,
  state: BatchState,
  key: AuthenticatedKey,
  lines: ReadonlyArray<InputLine>,
  chunk: ReadonlyArray<number>
) =>
  Effect.gen(function* () {
    const { store, limiter, options, workerId } = context
    const lock = yield* Semaphore.make(1)
    const finish = countingTokens(context.commits.finish(state.batchId, lock), limiter.recordTokens, key.keyId)
    const commits = { start: context.commits.start(state.batchId, lock), finish }
    let waiting = false
    yield* Effect.forEach(
      chunk,
      (line) =>
        Effect.gen(function* () {
          if (waiting) return
          const until = new Date((yield* Clock.currentTimeMillis) + options.leaseMillis)
          // Another worker took the batch over (this one stalled past its lease): leave it the line.
          if (!(yield* store.keepLease(state.batchId, workerId, until))) return
          const admitted = yield* Effect.result(limiter.admit(key.keyId, key.rateLimits))
          if (admitted._tag === "Failure") {
            waiting = true
            return
          }
          const run = yield* runLine(context.services, state, key, lines[line] as InputLine, commits).pipe(
            Effect.ensuring(admitted.success.release)
          )
          if (run === "waiting") waiting = true
        }),
      { concurrency: options.concurrency, discard: true }
    )
    return waiting
  })
