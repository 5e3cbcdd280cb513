/**
 * Where video tasks are kept, as a port: their event streams and read model, and the worker leases that let several
 * instances share the polling without doing a step twice. `app/VideoTasks.ts` decides; `adapters/store` keeps.
 */
import { Context, type Effect } from "effect"
import type { VideoTaskEvent, VideoTaskState } from "../../domain/video/VideoTask.ts"
import type { StoreUnavailable, StreamVersionConflict } from "../StoreErrors.ts"
import type { Companion } from "./LedgerWriter.ts"

/** One task as clients and operators see it, with its hold's outcome. */
export interface VideoTaskRow {
  readonly id: string
  readonly account_id: string
  readonly model: string
  readonly status: string
  readonly progress: number
  readonly prompt: string
  readonly seconds: number
  readonly resolution: string
  readonly ratio: string
  readonly input_type: string
  readonly error_code: string | null
  readonly error_message: string | null
  readonly content: {
    readonly key: string
    readonly bytes: number
    readonly width: number
    readonly height: number
  } | null
  readonly tokens: string | null
  readonly created_at: Date
  readonly completed_at: Date | null
  readonly expires_at: Date | null
  readonly content_expired_at: Date | null
  readonly held: string
  readonly captured: string | null
  readonly refunded: string | null
  readonly hold_status: string | null
}

/**
 * What a worker can follow: the video models of its catalog, each with the names of its upstreams. Tasks of other
 * models, or dispatched to an upstream the model does not have here, belong to another instance's catalog.
 */
export interface KnownVideoModel {
  readonly model: string
  readonly upstreams: ReadonlyArray<string>
}

export interface ClaimedTask {
  readonly task_id: string
  readonly failures: number
  readonly missing_polls: number
}

export class VideoTaskStore extends Context.Service<
  VideoTaskStore,
  {
    readonly load: (taskId: string) => Effect.Effect<VideoTaskState | undefined, StoreUnavailable>
    /** Appends `events` at `state`'s version and writes the read model of `next`, in one transaction. */
    readonly append: (
      state: VideoTaskState,
      events: ReadonlyArray<VideoTaskEvent>,
      next: VideoTaskState,
      metadata: Record<string, unknown>,
      at: Date
    ) => Effect.Effect<void, StoreUnavailable | StreamVersionConflict>
    /** The read-model write of `next`, to join a ledger batch as a companion. */
    readonly projection: (next: VideoTaskState) => Companion["projection"]
    readonly find: (accountId: string, taskId: string) => Effect.Effect<VideoTaskRow | undefined, StoreUnavailable>
    /** A page of an account's tasks, newest first (or oldest first), after the task `after` (one row more). */
    readonly list: (
      accountId: string,
      options: { readonly limit: number; readonly after: string | undefined; readonly order: "asc" | "desc" }
    ) => Effect.Effect<ReadonlyArray<VideoTaskRow>, StoreUnavailable>
    /** Takes up to `limit` unfinished tasks whose lease is free, for `owner` until `until`. */
    readonly claimDue: (
      owner: string,
      now: Date,
      until: Date,
      limit: number,
      known: ReadonlyArray<KnownVideoModel>
    ) => Effect.Effect<ReadonlyArray<ClaimedTask>, StoreUnavailable>
    /** Keeps the task's lease for `owner` until `until` if nobody took it over; false when somebody did. */
    readonly keepLease: (taskId: string, owner: string, until: Date) => Effect.Effect<boolean, StoreUnavailable>
    /** Extends `owner`'s lease to `until`, never shortening it. */
    readonly extendLease: (taskId: string, owner: string, until: Date) => Effect.Effect<void, StoreUnavailable>
    readonly reschedule: (
      taskId: string,
      owner: string,
      nextAt: Date,
      failures: number,
      missingPolls: number
    ) => Effect.Effect<void, StoreUnavailable>
    readonly dropLease: (taskId: string) => Effect.Effect<void, StoreUnavailable>
    readonly dueContentExpiries: (
      now: Date,
      limit: number
    ) => Effect.Effect<ReadonlyArray<{ readonly id: string }>, StoreUnavailable>
  }
>()("tollgate/app/ports/VideoTaskStore") {}
