/**
 * The projections replay rebuilds, as a list: each names its tables (key and compared columns), keeps only the fold
 * state that can still change, and flushes finished rows into a schema through the same row builders and statements
 * the live writers use. Replay's loop (PgReplay.ts) knows nothing of any one of them: a new projection is one more
 * entry in `PROJECTIONS`, with a version constant (ProjectionVersions.ts rebuilds it in place when that goes up).
 *
 * Memory: the ledger core keeps each account's balances and its pending holds only; a hold leaves memory once its
 * resolution is complete (the account's stream has moved past the command that resolved it), a video task or a batch
 * once nothing more can happen to it, deposits and usage deltas after each flush. What stays is O(accounts + keys +
 * pending holds + live video tasks + live batches' lines), never O(events).
 */
import type { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import { evolve } from "../../domain/ledger/LedgerAccount.ts"
import { type AccountState, type HoldState, initialState } from "../../domain/ledger/LedgerState.ts"
import { isLedgerEventType, type LedgerEvent } from "../../domain/ledger/LedgerEvent.ts"
import {
  accountsProjection,
  depositsProjection,
  holdsProjection,
  keysProjection,
  usageProjection,
  videoTasksProjection
} from "./ProjectionTables.ts"
import { batchesProjection } from "./BatchProjection.ts"

/** An event as replay reads it: its data already upcast to the current schema version. */
export interface ReplayEvent {
  readonly streamName: string
  readonly streamPosition: bigint
  readonly type: string
  readonly data: unknown
}

/** What the ledger core adds to an account event: the state after it, and the hold it is about (after it). */
export interface LedgerStep {
  readonly accountId: string
  readonly event: LedgerEvent
  readonly state: AccountState
  readonly hold: HoldState | undefined
}

interface AccountEntry {
  readonly state: AccountState
  readonly version: bigint
}

export interface Settling {
  readonly hold: HoldState
  readonly accountId: string
  readonly position: bigint
}

const holdIdOf = (event: LedgerEvent): string | undefined =>
  event.type === "AccountOpened" || event.type === "FundsDeposited" ? undefined : event.data.holdId

/**
 * The account fold every ledger projection reads: the decider's own `evolve`, with resolved holds moved out of the
 * account state (and deposit references dropped: only `decide` needs them) so memory stays bounded.
 */
export class LedgerCore {
  readonly accounts = new Map<string, AccountEntry>()
  /** Resolved holds whose command may still have events to come (settle = usage, then refund or overage). */
  private readonly settling = new Map<string, Settling>()

  step(event: ReplayEvent): LedgerStep | undefined {
    if (!event.streamName.startsWith("account-") || !isLedgerEventType(event.type)) return undefined
    const accountId = event.streamName.slice("account-".length)
    const ledgerEvent = { type: event.type, data: event.data } as LedgerEvent
    let before = this.accounts.get(accountId)?.state ?? initialState(accountId)
    const holdId = holdIdOf(ledgerEvent)
    const settling = holdId === undefined ? undefined : this.settling.get(holdId)
    if (holdId !== undefined && settling !== undefined && !before.holds.has(holdId)) {
      before = { ...before, holds: new Map(before.holds).set(holdId, settling.hold) }
    }
    let state = evolve(before, ledgerEvent)
    if (state.depositReferences.size > 0) state = { ...state, depositReferences: new Map() }
    const hold = holdId === undefined ? undefined : state.holds.get(holdId)
    if (hold !== undefined && hold.status !== "pending") {
      const holds = new Map(state.holds)
      holds.delete(hold.holdId)
      state = { ...state, holds }
      this.settling.set(hold.holdId, { hold, accountId, position: event.streamPosition })
    }
    this.accounts.set(accountId, { state, version: event.streamPosition })
    return { accountId, event: ledgerEvent, state, hold }
  }

  version(accountId: string): bigint {
    return this.accounts.get(accountId)?.version ?? 0n
  }

  /** A resolved hold is final once its account's stream has moved past the event that last touched it. */
  isFinal(accountId: string, position: bigint): boolean {
    return this.version(accountId) > position
  }

  /** Forgets the resolved holds that are final (`all`: at the end of a snapshot every command is complete). */
  prune(all: boolean): void {
    for (const [holdId, entry] of this.settling) {
      if (all || this.isFinal(entry.accountId, entry.position)) this.settling.delete(holdId)
    }
  }

  settlingHolds(): number {
    return this.settling.size
  }

  pendingHolds(): number {
    let count = 0
    for (const entry of this.accounts.values()) count += entry.state.holds.size
    return count
  }
}

export interface ProjectionTable {
  readonly name: string
  readonly key: ReadonlyArray<string>
  /** The columns replay compares and rewrites; anything else (operational: `last_used_at`) is left alone. */
  readonly columns: ReadonlyArray<string>
}

export interface ProjectionRun {
  readonly step: (event: ReplayEvent, ledger: LedgerStep | undefined) => void
  /** Writes the rows that can no longer change (every buffered row when `final`) into `schema` and forgets them. */
  readonly flush: (sql: SqlClient.SqlClient, schema: string, final: boolean) => Effect.Effect<void, SqlError.SqlError>
  /** Rows held in memory now (for tests and the benchmark's memory check). */
  readonly held: () => number
}

export interface Projection {
  readonly name: string
  /** Bump when the projection's rows change shape or meaning: the next start rebuilds it in place once. */
  readonly version: number
  readonly tables: ReadonlyArray<ProjectionTable>
  readonly start: (core: LedgerCore) => ProjectionRun
}

/** Every projection replay rebuilds and verifies, in the order their rows are written. */
export const PROJECTIONS: ReadonlyArray<Projection> = [
  accountsProjection,
  depositsProjection,
  holdsProjection,
  keysProjection,
  videoTasksProjection,
  batchesProjection,
  usageProjection
]

/** The code's version of each projection: what `projection_versions` is brought up to at start. */
export const PROJECTION_VERSIONS: Readonly<Record<string, number>> = Object.fromEntries(
  PROJECTIONS.map((p) => [p.name, p.version])
)
