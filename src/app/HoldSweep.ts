/**
 * Leases and the sweep. Every renewal interval, one statement renews the lease of each live hold older than the
 * interval, with the progress its request reports, and drops the leases of holds that ended. The sweep resolves the
 * holds whose request is gone — no lease and past their expiry, or a lease nobody renewed — settling one with recorded
 * progress at it and releasing the others as expired; it never touches a hold this instance still uses, and the
 * periodic sweep waits a whole lease after any database trouble (and after start), so live requests elsewhere have
 * renewed their own first.
 */
import { Clock, Effect, Schedule } from "effect"
import type { Decision, LedgerCommand } from "../domain/ledger/LedgerState.ts"
import type { LiveHolds, StoreHealth } from "./LiveHolds.ts"
import type { HoldLeaseStore } from "./ports/LedgerWriter.ts"
import type { StoreRefused, StoreUnavailable } from "./StoreErrors.ts"

export interface HoldSweepOptions {
  readonly holdTtlSeconds: number
  readonly sweepIntervalMillis: number
  /**
   * How often the leases of live holds are renewed, with their progress; undefined → the smaller of 2.5 s and an
   * eighth of the hold TTL. A lease lasts four intervals; a stream's progress is at most two intervals old when its
   * process dies (the bound on what a crash leaves unbilled).
   */
  readonly renewIntervalMillis?: number | undefined
}

/** The renewal interval and lease length `options` imply (see `HoldSweepOptions.renewIntervalMillis`). */
export const leaseTimings = (options: HoldSweepOptions) => {
  const renewMillis = options.renewIntervalMillis ?? Math.min(2_500, (options.holdTtlSeconds * 1000) / 8)
  return { renewMillis, leaseMillis: 4 * renewMillis }
}

const SWEEP_LIMIT = 5_000

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** Resolved leases nobody deleted (their instance crashed between the two) are cleaned up every this many sweeps. */
const LEASE_CLEANUP_EVERY_SWEEPS = 20

/** Starts the lease renewals and the periodic sweep in the current scope; returns the sweep for direct calls. */
export const makeHoldSweep = (deps: {
  readonly leases: HoldLeaseStore
  readonly live: LiveHolds
  readonly submit: (
    command: LedgerCommand,
    metadata: Record<string, unknown>
  ) => Effect.Effect<Decision, StoreUnavailable | StoreRefused>
  readonly health: StoreHealth
  readonly options: HoldSweepOptions
}) =>
  Effect.gen(function* () {
    const { leases, live, submit, health, options } = deps
    const { renewMillis, leaseMillis } = leaseTimings(options)

    // Wakes only while there is lease work: an idle instance does not tick every interval.
    yield* Effect.gen(function* () {
      yield* live.busy.await
      yield* Effect.sleep(renewMillis)
      const nowMs = yield* Clock.currentTimeMillis
      const renewals = live.renewals(nowMs, renewMillis)
      const gone = live.takeEnded()
      if (renewals.length > 0 || gone.length > 0) {
        yield* leases.write(renewals, gone, new Date(nowMs), new Date(nowMs + leaseMillis)).pipe(
          Effect.catch((error) =>
            Effect.sync(() => {
              health.troubleAt = nowMs
            }).pipe(Effect.andThen(Effect.logWarning("hold lease renewal failed", error.message)))
          )
        )
      }
      live.idleUnsafe()
    }).pipe(Effect.forever, Effect.forkScoped)

    /** One hold whose request is gone: settled at its recorded progress, or released. */
    const resolveOrphan = (hold: { hold_id: string; account_id: string; cost: string; usage: unknown }, at: string) => {
      const cost = BigInt(hold.cost)
      return cost > 0n
        ? submit(
            {
              type: "SettleHold",
              accountId: hold.account_id,
              holdId: hold.hold_id,
              cost,
              usage: { ...(isRecord(hold.usage) ? hold.usage : {}), estimated: true, recovered: true },
              at
            },
            { actor: "recovery" }
          )
        : submit(
            { type: "ReleaseHold", accountId: hold.account_id, holdId: hold.hold_id, reason: "expired", at },
            { actor: "expiry-sweep" }
          )
    }

    let sweeps = 0
    const sweepExpiredHolds = Effect.gen(function* () {
      const now = new Date(yield* Clock.currentTimeMillis)
      const orphans = yield* leases.orphans(now, SWEEP_LIMIT)
      const results = yield* Effect.forEach(
        orphans.filter((hold) => !live.has(hold.hold_id)),
        (hold) => resolveOrphan(hold, now.toISOString()),
        { concurrency: "unbounded" }
      )
      // Leases of holds resolved here are deleted by the renewal loop; those left by a crashed instance only once
      // the sweep resolved its holds, or (for a crash between a resolution and its lease's deletion) now and then.
      sweeps += 1
      if (orphans.length > 0 || sweeps % LEASE_CLEANUP_EVERY_SWEEPS === 0) {
        yield* leases.dropResolved
      }
      // A hold resolved meanwhile is rejected as not pending: it was resolved exactly once, by someone else.
      return results.filter((d) => d._tag === "Accepted").length
    }).pipe(Effect.withSpan("Ledger.sweepExpiredHolds"))

    yield* Effect.gen(function* () {
      if ((yield* Clock.currentTimeMillis) - health.troubleAt < leaseMillis + renewMillis) return
      yield* sweepExpiredHolds
    }).pipe(
      Effect.catch((error) => Effect.logWarning("hold expiry sweep failed", error.message)),
      Effect.repeat(Schedule.spaced(options.sweepIntervalMillis)),
      Effect.forkScoped
    )

    return { sweepExpiredHolds }
  })
