/**
 * The event store port: append with an expected stream version, read a stream, read everything after a checkpoint,
 * and idempotent command records. The Postgres/PGlite implementation lives in src/adapters/store.
 */
import { Context, type Effect } from "effect"
import type { IdempotencyConflict, StoreUnavailable, StreamVersionConflict } from "./StoreErrors.ts"

export interface NewEvent {
  readonly eventId: string
  readonly type: string
  readonly data: unknown
  readonly metadata?: Record<string, unknown>
  readonly schemaVersion?: number
}

export interface StoredEvent {
  readonly globalPosition: bigint
  readonly transactionId: bigint
  readonly streamName: string
  readonly streamPosition: bigint
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly data: unknown
  readonly metadata: Record<string, unknown>
  readonly recordedAt: Date
}

/** `"no_stream"`: the stream must not exist; `"any"`: no check; a bigint: the stream's current version. */
export type ExpectedVersion = bigint | "no_stream" | "any"

/** A catch-up position: events are ordered by (transaction id, global position). */
export interface Checkpoint {
  readonly transactionId: bigint
  readonly globalPosition: bigint
}

export const START: Checkpoint = { transactionId: 0n, globalPosition: 0n }

export interface IdempotencyRecord {
  readonly status: number
  readonly response: unknown
}

export class EventStore extends Context.Service<
  EventStore,
  {
    /** Appends atomically; runs inside the caller's transaction when there is one. Returns the new stream version. */
    readonly append: (
      stream: string,
      expected: ExpectedVersion,
      events: ReadonlyArray<NewEvent>,
      recordedAt: Date
    ) => Effect.Effect<bigint, StreamVersionConflict | StoreUnavailable>
    readonly readStream: (
      stream: string,
      options?: { readonly after?: bigint; readonly limit?: number }
    ) => Effect.Effect<ReadonlyArray<StoredEvent>, StoreUnavailable>
    /** Events committed after `after`, never skipping one whose transaction commits late. */
    readonly readAll: (
      after: Checkpoint,
      limit: number
    ) => Effect.Effect<
      { readonly events: ReadonlyArray<StoredEvent>; readonly checkpoint: Checkpoint },
      StoreUnavailable
    >
    /**
     * Runs `command` once per (scope, key): a replay with the same input hash returns the stored record, a different
     * hash fails with IdempotencyConflict. The record is written in the command's transaction.
     */
    readonly idempotent: <E, R>(
      scope: string,
      key: string,
      requestHash: string,
      command: Effect.Effect<IdempotencyRecord, E, R>
    ) => Effect.Effect<
      IdempotencyRecord & { readonly replayed: boolean },
      E | IdempotencyConflict | StoreUnavailable,
      R
    >
  }
>()("tollgate/app/EventStore") {}
