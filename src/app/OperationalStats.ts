/**
 * Figures an operator watches that live in the store, not in one process: read when `/metrics` is scraped, so every
 * instance on one database reports the same truth (a per-process counter would undercount with two instances).
 */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface OperationalSnapshot {
  /** Events ever appended (the highest global position). */
  readonly eventsAppended: bigint
  /** Holds placed and not yet resolved, and the micro-dollars they reserve. */
  readonly holdsOutstanding: { readonly count: number; readonly amount: bigint }
  /** Video tasks per status (`queued`, `in_progress`, `completed`, `failed`). */
  readonly videoTasks: Readonly<Record<string, number>>
  /** Batches per status (OpenAI's batch statuses; deleted message batches are gone). */
  readonly batches: Readonly<Record<string, number>>
}

export class OperationalStats extends Context.Service<
  OperationalStats,
  { readonly snapshot: Effect.Effect<OperationalSnapshot, StoreUnavailable> }
>()("tollgate/app/OperationalStats") {}
