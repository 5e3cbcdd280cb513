/**
 * Where the ledger keeps, outside the database, a settlement (or release) it decided but could not commit: a stream
 * that ended while the database was away is billed when it comes back, even if this process is restarted meanwhile.
 * Written only when a commit fails, so it costs nothing while the database answers. The file journal lives in the
 * data directory (`adapters/journal/FileSettlementJournal.ts`); without one, entries are kept in memory and survive
 * outages but not a restart.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { RefundReason } from "../domain/ledger/LedgerEvent.ts"
import type { Micros } from "../domain/Money.ts"

export type Resolution =
  | { readonly kind: "settle"; readonly cost: Micros; readonly usage: unknown }
  | { readonly kind: "release"; readonly reason: RefundReason }

/** A hold's resolution, decided at `decidedAt` and not yet committed. */
export interface PendingResolution {
  readonly holdId: string
  readonly accountId: string
  readonly resolution: Resolution
  readonly decidedAt: string
}

/** The journal could not be written or read; the entry is still retried in memory. */
export class JournalError extends Schema.TaggedError<JournalError>()("JournalError", {
  message: Schema.String
}) {}

export class SettlementJournal extends Context.Service<
  SettlementJournal,
  {
    /** Keeps `entry` until `complete` (a later record of the same hold replaces it). */
    readonly record: (entry: PendingResolution) => Effect.Effect<void, JournalError>
    readonly complete: (holdId: string) => Effect.Effect<void, JournalError>
    /** What was recorded and not completed, oldest first (on a file journal: by any earlier process too). */
    readonly pending: Effect.Effect<ReadonlyArray<PendingResolution>, JournalError>
    /** Whether entries survive a restart of the process. */
    readonly durable: boolean
  }
>()("tollgate/app/SettlementJournal") {
  /** Kept in this process only: retried through outages, lost with the process. */
  static readonly inMemory = Layer.sync(SettlementJournal, () => SettlementJournal.of(inMemoryJournal()))
}

/** A journal in this process only: entries are retried through outages and lost with the process. */
export const inMemoryJournal = (): SettlementJournal["Service"] => {
  const entries = new Map<string, PendingResolution>()
  return {
    record: (entry) =>
      Effect.sync(() => {
        entries.delete(entry.holdId)
        entries.set(entry.holdId, entry)
      }),
    complete: (holdId) =>
      Effect.sync(() => {
        entries.delete(holdId)
      }),
    pending: Effect.sync(() => [...entries.values()]),
    durable: false
  }
}
