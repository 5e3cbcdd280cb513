/**
 * The `batches` row of a batch, built from the aggregate's state, and the projection replay rebuilds it with. The live
 * writers (the batch store, and the ledger writer for a line's start and result) and replay build rows with this one
 * function and write them with this one statement.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { type BatchEvent, type BatchState, evolve, isBatchEventType, isFinished } from "../../domain/batch/BatchJob.ts"
import { recordsJson } from "./EventAppends.ts"
import type { Projection } from "./Projections.ts"

export const batchRecords = (states: ReadonlyArray<BatchState>): string =>
  recordsJson(
    states.map((s) => ({
      id: s.batchId,
      account_id: s.accountId,
      key_id: s.key.keyId,
      endpoint: s.endpoint,
      input_file_id: s.inputFileId,
      status: s.status,
      total: s.customIds.length,
      completed: s.succeeded,
      failed: s.failed,
      cost: String(s.cost),
      metadata: s.metadata,
      output_file_id: s.outputFileId,
      error_file_id: s.errorFileId,
      errors: s.message === null ? null : { message: s.message },
      created_at: s.createdAt,
      expires_at: s.expiresAt,
      in_progress_at: s.times.in_progress ?? null,
      finalizing_at: s.times.finalizing ?? null,
      completed_at: s.times.completed ?? null,
      failed_at: s.times.failed ?? null,
      expired_at: s.times.expired ?? null,
      cancelling_at: s.times.cancelling ?? null,
      cancelled_at: s.times.cancelled ?? null,
      updated_at: s.updatedAt,
      version: String(s.version)
    }))
  )

export const BATCH_COLUMNS =
  "id, account_id, key_id, endpoint, input_file_id, status, total, completed, failed, cost, metadata, output_file_id, error_file_id, errors, created_at, expires_at, in_progress_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at, updated_at, version"

/** Inserts or replaces whole rows (the state is always complete); `schema` is "public" or a replay scratch schema. */
export const upsertBatchesSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.batches (${sql.literal(BATCH_COLUMNS)})
  SELECT ${sql.literal(BATCH_COLUMNS)}
  FROM jsonb_to_recordset(${records}::jsonb) AS t(id text, account_id uuid, key_id uuid, endpoint text,
    input_file_id text, status text, total integer, completed integer, failed integer, cost bigint, metadata jsonb,
    output_file_id text, error_file_id text, errors jsonb, created_at timestamptz, expires_at timestamptz,
    in_progress_at timestamptz, finalizing_at timestamptz, completed_at timestamptz, failed_at timestamptz,
    expired_at timestamptz, cancelling_at timestamptz, cancelled_at timestamptz, updated_at timestamptz,
    version bigint)
  ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, completed = EXCLUDED.completed,
    failed = EXCLUDED.failed, cost = EXCLUDED.cost, output_file_id = EXCLUDED.output_file_id,
    error_file_id = EXCLUDED.error_file_id, errors = EXCLUDED.errors, in_progress_at = EXCLUDED.in_progress_at,
    finalizing_at = EXCLUDED.finalizing_at, completed_at = EXCLUDED.completed_at, failed_at = EXCLUDED.failed_at,
    expired_at = EXCLUDED.expired_at, cancelling_at = EXCLUDED.cancelling_at, cancelled_at = EXCLUDED.cancelled_at,
    updated_at = EXCLUDED.updated_at, version = EXCLUDED.version`

/** Rows per statement when flushing. */
const FLUSH_ROWS = 5_000

export const batchesProjection: Projection = {
  name: "batches",
  version: 1,
  tables: [{ name: "batches", key: ["id"], columns: BATCH_COLUMNS.split(",").map((c) => c.trim()) }],
  start: () => {
    const batches = new Map<string, BatchState>()
    const dirty = new Set<string>()
    const deleted = new Set<string>()
    return {
      step: (event) => {
        if (!event.streamName.startsWith("batch-") || !isBatchEventType(event.type)) return
        const batchId = event.streamName.slice("batch-".length)
        // A deleted batch has no row, whether or not an earlier flush wrote it (and its state may have left memory).
        if (event.type === "BatchDeleted") {
          batches.delete(batchId)
          dirty.delete(batchId)
          deleted.add(batchId)
          return
        }
        const state = evolve(batches.get(batchId), { type: event.type, data: event.data } as BatchEvent)
        if (state !== undefined) {
          batches.set(batchId, state)
          dirty.add(batchId)
        }
      },
      flush: (sql, schema, final) => {
        if (!final && dirty.size < FLUSH_ROWS) return Effect.void
        const gone = [...deleted]
        deleted.clear()
        const rows = [...dirty].flatMap((id) => {
          const state = batches.get(id)
          return state === undefined ? [] : [state]
        })
        dirty.clear()
        // A finished batch changes no more: it leaves memory once written.
        for (const state of rows) if (isFinished(state.status)) batches.delete(state.batchId)
        return Effect.forEach(
          Array.from({ length: Math.ceil(rows.length / FLUSH_ROWS) }, (_, i) =>
            rows.slice(i * FLUSH_ROWS, (i + 1) * FLUSH_ROWS)
          ),
          (chunk) => upsertBatchesSql(sql, schema, batchRecords(chunk)),
          { discard: true }
        ).pipe(
          Effect.andThen(
            gone.length === 0
              ? Effect.void
              : Effect.asVoid(sql`DELETE FROM ${sql(schema)}.batches WHERE id = ANY(${gone}::text[])`)
          )
        )
      },
      held: () => batches.size
    }
  }
}
