/**
 * Replay as a tool: rebuilds every projection from the events alone and either compares it with the live tables
 * (`verify`) or puts it in their place (`apply`), while the gateway keeps serving.
 */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface ReplayMismatch {
  readonly table: string
  readonly key: string
  readonly live: unknown
  readonly replayed: unknown
}

export interface ReplayProgress {
  readonly events: number
  /** Events in the snapshot being rebuilt; `events` passes it while an apply catches up with later commits. */
  readonly total: number
  readonly elapsedMs: number
}

export interface ReplayReport {
  readonly ok: boolean
  readonly events: number
  readonly accounts: number
  readonly mismatches: ReadonlyArray<ReplayMismatch>
  readonly durationMs: number
  readonly eventsPerSecond: number
  /** Rows each rebuilt table has. */
  readonly tables: Readonly<Record<string, number>>
}

/** `mismatches` are the differences found at the rebuild's snapshot, before the repair; `tables` counts live rows after. */
export interface ApplyReport extends ReplayReport {
  /** Rows rewritten (inserted or changed) and deleted in each live table. */
  readonly repaired: Readonly<Record<string, { readonly written: number; readonly deleted: number }>>
  /** Events committed while the rebuild ran, folded in under the writer lock. */
  readonly caughtUp: number
  /** How long writers were held back: from the lock being granted to the commit. */
  readonly pauseMs: number
}

export interface ReplayOptions {
  /** Called after every page of events. */
  readonly onProgress?: ((progress: ReplayProgress) => Effect.Effect<void>) | undefined
  /** Only these projections (by name); all when absent. */
  readonly projections?: ReadonlyArray<string> | undefined
}

export class Replay extends Context.Service<
  Replay,
  {
    readonly verify: Effect.Effect<ReplayReport, StoreUnavailable>
    readonly verifyWith: (options: ReplayOptions) => Effect.Effect<ReplayReport, StoreUnavailable>
    readonly apply: (options?: ReplayOptions) => Effect.Effect<ApplyReport, StoreUnavailable>
  }
>()("tollgate/app/Replay") {}
