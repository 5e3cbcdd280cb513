/**
 * How a batch's events are written: each command decided at the latest state and appended at its version, retried
 * from a fresh read when another writer moved the stream (a cancel from another instance, a racing worker). A line's
 * start commits as the companion of its hold's placing, its result as the companion of the hold's settlement or
 * release; one batch's commits go one at a time (a semaphore per batch run).
 */
import { Effect, type Semaphore } from "effect"
import { type BatchCommand, type BatchState, batchStream, decide, evolve } from "../../domain/batch/BatchJob.ts"
import type { BatchEvent, BatchRejection, LineResult } from "../../domain/batch/BatchJob.ts"
import { isStorableText, toStorableText } from "../../domain/StorableText.ts"
import type { Ledger, PlaceHoldInput } from "../Ledger.ts"
import type { LedgerRejected } from "../LedgerErrors.ts"
import type { BatchStore } from "../ports/BatchStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import type { Commit, LineMoney } from "./BatchLineRun.ts"

const COMMIT_ATTEMPTS = 8

export type Recorded =
  | { readonly _tag: "Written"; readonly next: BatchState }
  | { readonly _tag: "Refused"; readonly state: BatchState; readonly rejection: BatchRejection }
  | { readonly _tag: "Gone" }

/** What a start can answer: the hold is placed, another run started the line first, or the ledger refused it. */
export type Started = "started" | "taken" | LedgerRejected

export interface CommitServices {
  readonly store: BatchStore["Service"]
  readonly ledger: Ledger["Service"]
  readonly nowIso: Effect.Effect<string>
  /** Told of each line result this writer committed (for `/metrics`: BatchLineTally.ts). */
  readonly lineFinished?: ((endpoint: string, result: LineResult) => void) | undefined
}

/** A JSON value whose every string and key can be stored in jsonb (model output can carry a NUL). */
export const storable = (value: unknown): unknown => {
  if (typeof value === "string") return isStorableText(value) ? value : toStorableText(value)
  if (Array.isArray(value)) return value.map(storable)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [toStorableText(key), storable(item)]))
  }
  return value
}

export const makeCommits = ({ store, ledger, nowIso, lineFinished }: CommitServices) => {
  /** Applies `command` at the latest state with `write`; ledger refusals and outages fail, conflicts retry. */
  const record = <E extends { readonly _tag: string }>(
    batchId: string,
    command: (at: string) => BatchCommand,
    write: (state: BatchState, next: BatchState, events: ReadonlyArray<BatchEvent>) => Effect.Effect<unknown, E>
  ): Effect.Effect<Recorded, Exclude<E, { readonly _tag: "StreamVersionConflict" }> | StoreUnavailable> =>
    Effect.gen(function* () {
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        const state = yield* store.load(batchId)
        if (state === undefined) return { _tag: "Gone" } as const
        const decision = decide(state, command(yield* nowIso))
        if (decision._tag === "Rejected") return { _tag: "Refused", state, rejection: decision.rejection } as const
        const next = decision.events.reduce<BatchState | undefined>(evolve, state) as BatchState
        const written = yield* Effect.result(write(state, next, decision.events))
        if (written._tag === "Success") return { _tag: "Written", next } as const
        if (written.failure._tag !== "StreamVersionConflict") {
          return yield* Effect.fail(written.failure as Exclude<E, { readonly _tag: "StreamVersionConflict" }>)
        }
      }
      return yield* Effect.die(`batch ${batchId}: the stream kept moving under ${COMMIT_ATTEMPTS} attempts`)
    })

  const plainAppend = (state: BatchState, next: BatchState, events: ReadonlyArray<BatchEvent>) =>
    store.append(state, events, next, [], new Date(next.updatedAt))

  const companion = (state: BatchState, next: BatchState, events: ReadonlyArray<BatchEvent>) => ({
    stream: batchStream(state.batchId),
    expected: state.version,
    events,
    projection: store.projection(next)
  })

  /** A line's result with the ledger command of its hold, in one transaction. */
  const finish =
    (batchId: string, lock: Semaphore.Semaphore): Commit =>
    (result, money: LineMoney) =>
      lock.withPermits(1)(
        record(
          batchId,
          (at) => ({ type: "FinishLine", result: storable(result) as LineResult, at }),
          (state, next, events) => {
            switch (money._tag) {
              case "Settle":
                return ledger.settleWith(
                  state.accountId,
                  money.holdId,
                  money.cost,
                  money.usage,
                  companion(state, next, events)
                )
              case "Release":
                return ledger.releaseWith(state.accountId, money.holdId, money.reason, companion(state, next, events))
              case "None":
                return plainAppend(state, next, events)
            }
          }
        ).pipe(
          Effect.flatMap((recorded) =>
            recorded._tag === "Written" && lineFinished !== undefined
              ? Effect.sync(() => lineFinished(recorded.next.endpoint, result))
              : Effect.void
          ),
          // A hold already resolved, or refused: its line's result is committed (or the batch ended); nothing to do.
          Effect.catchTag("LedgerRejected", () => Effect.void),
          Effect.catchTag("StoreRefused", (error) =>
            Effect.logWarning("the ledger refused a batch line's commit", error.message)
          )
        )
      )

  /** Places a line's hold with `BatchLineStarted`: a line's hold is placed once, whoever races for it. */
  const start =
    (batchId: string, lock: Semaphore.Semaphore) =>
    (line: number, hold: PlaceHoldInput & { readonly holdId: string }) =>
      lock.withPermits(1)(
        Effect.gen(function* () {
          const recorded = yield* record(
            batchId,
            (at) => ({ type: "StartLine", line, holdId: hold.holdId, at }),
            (state, next, events) => ledger.placeHoldWith(hold, companion(state, next, events))
          ).pipe(
            Effect.catchTag("StoreRefused", (error) => Effect.die(error)),
            Effect.catchTag("LedgerRejected", (error) => Effect.succeed(error))
          )
          if (recorded._tag === "LedgerRejected") return recorded as Started
          return (recorded._tag === "Written" ? "started" : "taken") as Started
        })
      )

  return { record, plainAppend, finish, start }
}
