/**
 * Tamper evidence for the event store: every event's hash chains to the previous event of its stream, stream heads
 * carry the last hash, and checkpoints pin the global chain in commit order. `verify` recomputes all of it.
 */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface BrokenLink {
  readonly stream: string
  /** The first stream position whose stored hash (or position) does not match the recomputed chain. */
  readonly position: string
  readonly globalPosition: string
  readonly reason: "hash_mismatch" | "position_gap" | "head_mismatch" | "checkpoint_mismatch"
}

export interface AuditReport {
  readonly ok: boolean
  /** Events whose hash was recomputed. */
  readonly checked: number
  readonly streams: number
  /** The broken link with the lowest global position, if any. */
  readonly firstBroken: BrokenLink | null
  readonly checkpoints: { readonly verified: number; readonly latest: AuditCheckpoint | null }
  readonly durationMs: number
}

export interface AuditCheckpoint {
  readonly globalPosition: string
  readonly events: string
  /** Hex SHA-256 of the global chain up to and including `globalPosition` (commit order). */
  readonly chainHash: string
  readonly recordedAt: string
}

export class Audit extends Context.Service<
  Audit,
  {
    /** Recomputes every stream chain and the global chain through every stored checkpoint; records a new one. */
    readonly verify: Effect.Effect<AuditReport, StoreUnavailable>
    /** Extends the global chain from the last checkpoint and records a new checkpoint (when there are new events). */
    readonly checkpoint: Effect.Effect<AuditCheckpoint | null, StoreUnavailable>
  }
>()("tollgate/app/Audit") {}
