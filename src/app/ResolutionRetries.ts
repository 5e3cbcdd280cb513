/**
 * Hold resolutions that must commit. A settlement of a delivered response (or a release) that the database could not
 * take is recorded in the settlement journal and retried, oldest first, with back-off (200 ms doubling to 5 s) until
 * it commits; its hold stays live meanwhile, so no sweep releases it. At start, what an earlier process journaled
 * and did not commit is resumed. A settlement whose usage the database refuses is retried without the usage: the cost
 * is still owed. A resolution that finds its hold already resolved (an earlier attempt committed after all, its
 * answer lost) is logged and dropped.
 */
import { Clock, Effect, Exit, Queue } from "effect"
import type { Decision, LedgerCommand, LedgerRejection } from "../domain/ledger/LedgerState.ts"
import type { LiveHolds, StoreHealth } from "./LiveHolds.ts"
import type { PendingResolution, SettlementJournal } from "./SettlementJournal.ts"
import { StoreRefused, type StoreUnavailable } from "./StoreErrors.ts"

export interface ResolutionRetries {
  /** Keeps `entry` (journaled) and retries it until it commits; its hold stays live until then. */
  readonly defer: (entry: PendingResolution) => Effect.Effect<void>
  /** Whether a resolution of `holdId` is waiting for the database. */
  readonly has: (holdId: string) => boolean
  readonly size: () => number
}

/** The usage a settlement is retried with when the database refused its own. */
export const UNSTORABLE_USAGE = { unstorableUsage: true } as const

const FIRST_DELAY_MS = 200
const LONGEST_DELAY_MS = 5_000

/** Starts the retry loop in the current scope and resumes what the journal still holds. */
export const makeResolutionRetries = (deps: {
  readonly submit: (
    command: LedgerCommand,
    metadata: Record<string, unknown>
  ) => Effect.Effect<Decision, StoreUnavailable | StoreRefused>
  readonly journal: SettlementJournal["Service"]
  readonly live: LiveHolds
  readonly health: StoreHealth
  readonly describe: (rejection: LedgerRejection) => string
}) =>
  Effect.gen(function* () {
    const { submit, journal, live, health, describe } = deps
    const deferred = new Map<string, PendingResolution>()
    const wake = yield* Queue.sliding<void>(1)

    const defer = (entry: PendingResolution) =>
      Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        health.troubleAt = nowMs
        live.add(entry.holdId, entry.accountId, nowMs)
        deferred.delete(entry.holdId)
        deferred.set(entry.holdId, entry)
        yield* journal
          .record(entry)
          .pipe(
            Effect.catch((error) =>
              Effect.logError("settlement journal write failed; the settlement is retried in memory only").pipe(
                Effect.annotateLogs({ holdId: entry.holdId, error: error.message })
              )
            )
          )
        yield* Queue.offer(wake, undefined)
      })

    const finish = (entry: PendingResolution) =>
      Effect.gen(function* () {
        deferred.delete(entry.holdId)
        live.remove(entry.holdId)
        yield* journal
          .complete(entry.holdId)
          .pipe(
            Effect.catch((error) =>
              Effect.logWarning("settlement journal could not mark a settlement done").pipe(
                Effect.annotateLogs({ holdId: entry.holdId, error: error.message })
              )
            )
          )
      })

    /** A decision on a resolution that committed late: a rejection means the hold was resolved first. */
    const reportLate = (entry: PendingResolution, decision: Decision) =>
      decision._tag === "Accepted"
        ? Effect.logInfo("a deferred hold resolution committed").pipe(
            Effect.annotateLogs({ holdId: entry.holdId, kind: entry.resolution.kind })
          )
        : Effect.logWarning("a deferred hold resolution found the hold already resolved").pipe(
            Effect.annotateLogs({
              holdId: entry.holdId,
              kind: entry.resolution.kind,
              reason: describe(decision.rejection)
            })
          )

    const commit = (entry: PendingResolution) =>
      Effect.flatMap(Clock.currentTimeMillis, (ms) => {
        const at = new Date(ms).toISOString()
        const { holdId, accountId, resolution } = entry
        return submit(
          resolution.kind === "settle"
            ? { type: "SettleHold", accountId, holdId, cost: resolution.cost, usage: resolution.usage, at }
            : { type: "ReleaseHold", accountId, holdId, reason: resolution.reason, at },
          { actor: "settlement-retry", decidedAt: entry.decidedAt }
        )
      })

    /** One pass over the deferred resolutions, oldest first; false when the database is still unavailable. */
    const retryAll = Effect.gen(function* () {
      for (const entry of [...deferred.values()]) {
        const outcome = yield* Effect.exit(commit(entry))
        if (Exit.isSuccess(outcome)) {
          yield* reportLate(entry, outcome.value)
          yield* finish(entry)
          continue
        }
        const error = Exit.findErrorOption(outcome)
        if (error._tag === "Some" && error.value instanceof StoreRefused) {
          if (entry.resolution.kind === "settle") {
            yield* defer({ ...entry, resolution: { ...entry.resolution, usage: UNSTORABLE_USAGE } })
          } else {
            yield* Effect.logError("a deferred hold release was refused by the database; the sweep will release it")
            yield* finish(entry)
          }
          continue
        }
        return false
      }
      return true
    })

    yield* Effect.gen(function* () {
      let delay = FIRST_DELAY_MS
      for (;;) {
        if (deferred.size === 0) {
          yield* Queue.take(wake)
          delay = FIRST_DELAY_MS
        } else {
          yield* Effect.sleep(delay)
        }
        const cleared = yield* retryAll
        delay = cleared ? FIRST_DELAY_MS : Math.min(delay * 2, LONGEST_DELAY_MS)
      }
    }).pipe(Effect.forkScoped)

    const leftover = yield* journal.pending.pipe(
      Effect.catch((error) => Effect.as(Effect.logError("settlement journal could not be read", error.message), []))
    )
    if (leftover.length > 0) {
      const nowMs = yield* Clock.currentTimeMillis
      for (const entry of leftover) {
        deferred.set(entry.holdId, entry)
        live.add(entry.holdId, entry.accountId, nowMs)
      }
      yield* Effect.logInfo("resuming hold resolutions an earlier process could not commit").pipe(
        Effect.annotateLogs({ count: leftover.length })
      )
      yield* Queue.offer(wake, undefined)
    }

    return {
      defer,
      has: (holdId: string) => deferred.has(holdId),
      size: () => deferred.size
    } satisfies ResolutionRetries
  })
