/** Rebuilds every projection from the events alone and compares it with the live one. */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface ReplayMismatch {
  readonly table: string
  readonly key: string
  readonly live: unknown
  readonly replayed: unknown
}

export interface ReplayReport {
  readonly ok: boolean
  readonly events: number
  readonly accounts: number
  readonly mismatches: ReadonlyArray<ReplayMismatch>
}

export class Replay extends Context.Service<
  Replay,
  { readonly verify: Effect.Effect<ReplayReport, StoreUnavailable> }
>()("tollgate/app/Replay") {}
