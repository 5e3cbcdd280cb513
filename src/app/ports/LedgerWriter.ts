/**
 * What the ledger needs from its store, as a port: commands submitted one by one and committed in batches (the
 * adapter groups many requests' commands into one transaction and decides each against the stream it locked), the
 * accounts as last committed (for deciding cheaply whether a hold will likely pass), and the hold leases. The ledger's
 * rules live in `app/Ledger.ts` and the domain decider; shards, batching and SQL live in `adapters/store`.
 */
import type { AccountState, Decision, LedgerCommand } from "../../domain/ledger/LedgerState.ts"
import { Context, type Effect } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import type { LeaseRenewal, StoreHealth } from "../LiveHolds.ts"
import type { StoreRefused, StoreUnavailable } from "../StoreErrors.ts"

/**
 * Events of another stream (a video task's) that must commit in the same transaction as a ledger command, and only
 * if the command is accepted: `expected` is checked against the locked head of that stream, and the companion's
 * read-model write joins the batch's one statement.
 */
export interface Companion {
  readonly stream: string
  readonly expected: bigint | "no_stream"
  readonly events: ReadonlyArray<{ readonly type: string; readonly data: unknown }>
  readonly projection: (sql: SqlClient.SqlClient) => Statement.Fragment
}

/** A companion's stream was not at the expected version: nothing of that item was written; the others commit. */
export interface CompanionConflict {
  readonly _tag: "CompanionConflict"
  readonly stream: string
}

export type BatchOutcome = Decision | CompanionConflict

export interface WriterStatsSnapshot {
  readonly batches: number
  readonly commands: number
  /** Batches that collided with another writer and were decided again with the stream heads locked. */
  readonly lockedRetries: number
  /** Batches retried because another instance created one of their streams first. */
  readonly conflictRetries: number
  /** Batches the database refused that were split so that only the refused commands failed. */
  readonly isolations: number
}

/**
 * How far a lingering command may wait (see LingeringCommand). `"follower"`: for its own follower, so that a whole
 * reply's hold and settlement are written as one. `"next-batch"`: also goes with whatever its shard commits next — a
 * stream's hold, which must commit before the stream's first byte anyway and gains nothing from waiting longer.
 */
export type LingerUntil = "follower" | "next-batch"

/**
 * A hold submitted to wait briefly before it is written (`submitLingering`), so that a short call's settlement can
 * share its transaction. It is written with its own follower (`followWith`), right before the next command of its
 * account, when asked (`flush`), or once its linger time is up — whichever comes first; with `"next-batch"`, also
 * with its shard's next batch. Other accounts' commands do not move it otherwise: they are decided apart.
 */
export interface LingeringCommand {
  /** The command's outcome once it is decided and committed. */
  readonly outcome: Effect.Effect<BatchOutcome, StoreUnavailable | StoreRefused>
  /** Sends the command to be written now, if it still waits. */
  readonly flush: Effect.Effect<void>
  /**
   * If the command still waits: queues it with `next` right behind it, to be decided in that order in one batch, and
   * returns `next`'s outcome. Undefined when the command is already on its way (then nothing was queued).
   */
  readonly followWith: (
    next: LedgerCommand,
    metadata: Record<string, unknown>
  ) => Effect.Effect<Effect.Effect<BatchOutcome, StoreUnavailable | StoreRefused> | undefined>
}

/** A pending hold whose request is gone, with the progress its last lease recorded (cost 0 and no usage if none). */
export interface OrphanHold {
  readonly hold_id: string
  readonly account_id: string
  readonly cost: string
  readonly usage: unknown
  readonly leased: boolean
}

/** The leases of live holds (migration 0008), which tell the sweep whose request is gone. */
export interface HoldLeaseStore {
  /** Renews `renewals` until `leaseUntil` and deletes the leases of holds that `ended`, in one statement. */
  readonly write: (
    renewals: ReadonlyArray<LeaseRenewal>,
    ended: ReadonlyArray<string>,
    now: Date,
    leaseUntil: Date
  ) => Effect.Effect<void, StoreUnavailable>
  /** Pending holds whose request is gone: never leased and past their expiry, or leased and not renewed in time. */
  readonly orphans: (now: Date, limit: number) => Effect.Effect<ReadonlyArray<OrphanHold>, StoreUnavailable>
  /** Deletes the leases of holds that are resolved. */
  readonly dropResolved: Effect.Effect<void, StoreUnavailable>
}

export class LedgerWriter extends Context.Service<
  LedgerWriter,
  {
    /** Commits `command` (with `companion`, when given) in the next batch of its account's shard. */
    readonly submit: (
      command: LedgerCommand,
      metadata: Record<string, unknown>,
      companion: Companion | undefined
    ) => Effect.Effect<BatchOutcome, StoreUnavailable | StoreRefused>
    /**
     * Like `submit`, but the command may wait a little to share a batch with what follows it (see LingeringCommand).
     * `onDecided` is called as soon as its batch has committed (or failed), before any awaiting fiber resumes.
     */
    readonly submitLingering: (
      command: LedgerCommand,
      metadata: Record<string, unknown>,
      onDecided?: (outcome: BatchOutcome | StoreUnavailable | StoreRefused) => void,
      until?: LingerUntil
    ) => Effect.Effect<LingeringCommand>
    /** The account as this instance last committed it; undefined when it has not. */
    readonly knownState: (accountId: string) => AccountState | undefined
    readonly stats: () => WriterStatsSnapshot
    /** When this instance last saw the store fail (the writer and the lease renewals record it). */
    readonly health: StoreHealth
    readonly leases: HoldLeaseStore
  }
>()("tollgate/app/ports/LedgerWriter") {}
