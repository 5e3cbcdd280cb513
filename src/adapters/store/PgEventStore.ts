/**
 * The event store on Postgres/PGlite. Appends lock the stream's head row and move its version with a compare-and-set,
 * inside the caller's transaction when there is one, so projections written beside them commit or fail together.
 */
import { Effect, Layer } from "effect"
import { currentSchemaVersion, upcastLedgerEvent } from "../../domain/ledger/Upcast.ts"
import { SqlClient, SqlError } from "effect/sql"
import {
  type Checkpoint,
  EventStore,
  type ExpectedVersion,
  type IdempotencyRecord,
  type NewEvent,
  type StoredEvent
} from "../../app/EventStore.ts"
import { IdempotencyConflict, StoreUnavailable } from "../../app/StoreErrors.ts"
import { traced } from "../../app/Traced.ts"
import { appendMany } from "./EventAppends.ts"

export const storeUnavailable = (error: SqlError.SqlError): StoreUnavailable =>
  new StoreUnavailable({ message: `the database is unavailable: ${error.message}` })

export interface EventRow {
  readonly global_position: bigint
  readonly transaction_id: bigint
  readonly stream_name: string
  readonly stream_position: bigint
  readonly event_id: string
  readonly event_type: string
  readonly schema_version: number
  readonly data: unknown
  readonly metadata: Record<string, unknown>
  readonly recorded_at: Date
}

/** Column list for reads: xid8 is cast because the wire codec has no binary decoder for it. */
export const EVENT_COLUMNS =
  "global_position, transaction_id::text::bigint AS transaction_id, stream_name, stream_position, event_id, " +
  "event_type, schema_version, data, metadata, recorded_at"

export const toStoredEvent = (row: EventRow): StoredEvent => ({
  globalPosition: row.global_position,
  transactionId: row.transaction_id,
  streamName: row.stream_name,
  streamPosition: row.stream_position,
  eventId: row.event_id,
  type: row.event_type,
  // Readers see every event in the current version of its type.
  schemaVersion: Math.max(row.schema_version, currentSchemaVersion(row.event_type)),
  data: upcastLedgerEvent(row.event_type, row.schema_version, row.data),
  metadata: row.metadata,
  recordedAt: row.recorded_at
})

export const layer = Layer.effect(
  EventStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const append = Effect.fnUntraced(function* (
      stream: string,
      expected: ExpectedVersion,
      events: ReadonlyArray<NewEvent>,
      recordedAt: Date
    ) {
      const versions = yield* sql
        .withTransaction(appendMany(sql, [{ stream, expected, events }], recordedAt))
        .pipe(Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error))))
      return versions.get(stream) ?? 0n
    }, traced("EventStore.append"))

    const readStream = Effect.fnUntraced(function* (
      stream: string,
      options?: { readonly after?: bigint; readonly limit?: number }
    ) {
      const rows = yield* sql<EventRow>`
        SELECT ${sql.literal(EVENT_COLUMNS)} FROM events
        WHERE stream_name = ${stream} AND stream_position > ${options?.after ?? 0n}
        ORDER BY stream_position LIMIT ${options?.limit ?? 1_000_000}`.pipe(
        Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error)))
      )
      return rows.map(toStoredEvent)
    }, traced("EventStore.readStream"))

    const readAll = Effect.fnUntraced(function* (after: Checkpoint, limit: number) {
      // Stop below the oldest transaction still running: its events may carry lower global positions than events
      // already committed, and must not be jumped over.
      const rows = yield* sql<EventRow>`
        SELECT ${sql.literal(EVENT_COLUMNS)} FROM events
        WHERE (transaction_id, global_position) > (${String(after.transactionId)}::xid8, ${after.globalPosition})
          AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY transaction_id, global_position LIMIT ${limit}`.pipe(
        Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error)))
      )
      const events = rows.map(toStoredEvent)
      const last = events.at(-1)
      const checkpoint: Checkpoint =
        last === undefined ? after : { transactionId: last.transactionId, globalPosition: last.globalPosition }
      return { events, checkpoint }
    }, traced("EventStore.readAll"))

    const idempotent = <E, R>(
      scope: string,
      key: string,
      requestHash: string,
      command: Effect.Effect<IdempotencyRecord, E, R>
    ) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            // The insert-first claim blocks a concurrent twin until this transaction ends, then it sees the record.
            const claimed = yield* sql<{ key: string }>`
              INSERT INTO idempotency_records (scope, key, request_hash, status, response, created_at)
              VALUES (${scope}, ${key}, ${requestHash}, 0, 'null'::jsonb, now())
              ON CONFLICT (scope, key) DO NOTHING RETURNING key`
            if (claimed.length === 0) {
              const [existing] = yield* sql<{ request_hash: string; status: number; response: unknown }>`
                SELECT request_hash, status, response FROM idempotency_records WHERE scope = ${scope} AND key = ${key}`
              if (existing.request_hash !== requestHash) return yield* new IdempotencyConflict({ key })
              return { status: existing.status, response: existing.response, replayed: true }
            }
            const record = yield* command
            yield* sql`
              UPDATE idempotency_records SET status = ${record.status}, response = ${JSON.stringify(record.response)}::jsonb
              WHERE scope = ${scope} AND key = ${key}`
            return { ...record, replayed: false }
          })
        )
        .pipe(Effect.mapError((error) => (SqlError.isSqlError(error) ? storeUnavailable(error) : error)))

    return EventStore.of({ append, readStream, readAll, idempotent })
  })
)

/** Maps the SQL client's errors to StoreUnavailable (→ 503), leaving every other error as it is. */
export const orUnavailable = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, Exclude<E, SqlError.SqlError> | StoreUnavailable, R> =>
  Effect.mapError(effect, (error) => (SqlError.isSqlError(error) ? storeUnavailable(error) : error)) as Effect.Effect<
    A,
    Exclude<E, SqlError.SqlError> | StoreUnavailable,
    R
  >
