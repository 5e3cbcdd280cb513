/**
 * Postgres side of batches: files, the stream fold, appends that write the read model in the same transaction, the
 * read-model queries and the worker leases. A line's result goes through the ledger writer instead (as the companion
 * of the hold command that bills or refunds it), with the same read-model statement.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { EventStore } from "../../app/EventStore.ts"
import { isUuid } from "../../domain/Ids.ts"
import { type BatchRow, BatchStore, type FileRow, type NewFile } from "../../app/ports/BatchStore.ts"
import { MESSAGE_BATCH_PURPOSE } from "../../domain/batch/BatchInput.ts"
import { type BatchEvent, type BatchState, batchStream, fold, isBatchEventType } from "../../domain/batch/BatchJob.ts"
import { batchRecords, upsertBatchesSql } from "./BatchProjection.ts"
import { orUnavailable } from "./PgEventStore.ts"

/** The `batches` row of `s`, written whole (BatchProjection.ts: the statement replay writes it with). */
const upsertBatch = (sql: SqlClient.SqlClient, s: BatchState) => upsertBatchesSql(sql, "public", batchRecords([s]))

const insertFile = (sql: SqlClient.SqlClient, file: NewFile) =>
  sql`INSERT INTO batch_files (id, account_id, purpose, filename, bytes, content, created_at, expires_at)
    VALUES (${file.id}, ${file.accountId}::uuid, ${file.purpose}, ${file.filename},
      ${Buffer.byteLength(file.content, "utf8")}, ${file.content}, ${file.at}, ${file.expiresAt})`

const FILE = (sql: SqlClient.SqlClient) =>
  sql`SELECT id, account_id::text, purpose, filename, bytes, created_at, expires_at FROM batch_files`

const BATCH = (sql: SqlClient.SqlClient) => sql`
  SELECT id, account_id::text, key_id::text, endpoint, input_file_id, status, total, completed, failed, cost::text, metadata,
    output_file_id, error_file_id, errors, created_at, expires_at, in_progress_at, finalizing_at, completed_at,
    failed_at, expired_at, cancelling_at, cancelled_at
  FROM batches`

/** The cursor of a newest-first page: rows strictly older than the row `after` of `table`. */
const olderThan = (sql: SqlClient.SqlClient, table: "batches" | "batch_files", after: string | undefined) =>
  after === undefined
    ? sql`TRUE`
    : sql`(created_at, id) < (SELECT created_at, id FROM ${sql(table)} WHERE id = ${after})`

export const layer = Layer.effect(
  BatchStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const events = yield* EventStore

    const load = (batchId: string) =>
      Effect.map(events.readStream(batchStream(batchId)), (stored) =>
        fold(stored.flatMap((e) => (isBatchEventType(e.type) ? [{ type: e.type, data: e.data } as BatchEvent] : [])))
      )

    const append = (
      state: BatchState | undefined,
      appended: ReadonlyArray<BatchEvent>,
      next: BatchState,
      files: ReadonlyArray<NewFile>,
      at: Date
    ) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            if (appended.length > 0) {
              yield* events.append(
                batchStream(next.batchId),
                state === undefined ? "no_stream" : state.version,
                appended.map((event) => ({ eventId: crypto.randomUUID(), type: event.type, data: event.data })),
                at
              )
            }
            for (const file of files) yield* insertFile(sql, file)
            if (next.deleted) {
              yield* sql`DELETE FROM batches WHERE id = ${next.batchId}`
              // A message batch's requests are the gateway's own file: they go with it.
              yield* sql`DELETE FROM batch_files WHERE id = ${next.inputFileId} AND purpose = ${MESSAGE_BATCH_PURPOSE}`
            } else yield* upsertBatch(sql, next)
          })
        )
        .pipe(orUnavailable)

    return BatchStore.of({
      createFile: (file) => Effect.asVoid(orUnavailable(insertFile(sql, file))),
      findFile: (accountId, fileId) =>
        Effect.map(
          orUnavailable(sql<FileRow>`${FILE(sql)} WHERE id = ${fileId} AND account_id = ${accountId}::uuid`),
          (rows) => rows[0]
        ),
      fileContent: (accountId, fileId) =>
        Effect.map(
          orUnavailable(sql<{ content: string }>`SELECT content FROM batch_files
            WHERE id = ${fileId} AND account_id = ${accountId}::uuid`),
          (rows) => rows[0]?.content
        ),
      listFiles: (accountId, page) =>
        orUnavailable(sql<FileRow>`${FILE(sql)}
          WHERE account_id = ${accountId}::uuid AND ${olderThan(sql, "batch_files", page.after)}
            AND ${page.purpose === undefined ? sql`TRUE` : sql`purpose = ${page.purpose}`}
            AND purpose <> ${MESSAGE_BATCH_PURPOSE} AND (expires_at IS NULL OR expires_at > ${page.now})
          ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`),
      deleteFile: (accountId, fileId) =>
        Effect.map(
          orUnavailable(sql<{ id: string }>`DELETE FROM batch_files
            WHERE id = ${fileId} AND account_id = ${accountId}::uuid RETURNING id`),
          (rows) => rows.length === 1
        ),
      deleteExpiredFiles: (now) =>
        Effect.map(
          orUnavailable(sql<{ id: string }>`DELETE FROM batch_files f
            WHERE f.expires_at <= ${now}
              AND NOT EXISTS (SELECT 1 FROM batches b WHERE b.input_file_id = f.id
                AND b.status IN ('validating', 'in_progress', 'finalizing', 'cancelling'))
            RETURNING f.id`),
          (rows) => rows.length
        ),
      load,
      append,
      projection: (next) => (client) => upsertBatch(client, next),
      find: (accountId, batchId) =>
        Effect.map(
          orUnavailable(sql<BatchRow>`${BATCH(sql)} WHERE id = ${batchId} AND account_id = ${accountId}::uuid`),
          (rows) => rows[0]
        ),
      list: (accountId, page) => {
        const endpoint =
          page.endpoint === undefined
            ? sql`TRUE`
            : "is" in page.endpoint
              ? sql`endpoint = ${page.endpoint.is}`
              : sql`endpoint <> ${page.endpoint.not}`
        return page.before === undefined
          ? orUnavailable(sql<BatchRow>`${BATCH(sql)}
              WHERE account_id = ${accountId}::uuid AND ${endpoint} AND ${olderThan(sql, "batches", page.after)}
              ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`)
          : orUnavailable(sql<BatchRow>`${BATCH(sql)}
              WHERE account_id = ${accountId}::uuid AND ${endpoint}
                AND (created_at, id) > (SELECT created_at, id FROM batches WHERE id = ${page.before})
              ORDER BY created_at ASC, id ASC LIMIT ${page.limit + 1}`)
      },
      findAny: (batchId) =>
        Effect.map(orUnavailable(sql<BatchRow>`${BATCH(sql)} WHERE id = ${batchId}`), (rows) => rows[0]),
      listAll: (page) =>
        orUnavailable(sql<BatchRow>`${BATCH(sql)}
          WHERE ${page.accountId === undefined ? sql`TRUE` : sql`account_id = ${page.accountId}::uuid`}
            AND ${page.status === undefined ? sql`TRUE` : sql`status = ${page.status}`}
            AND ${olderThan(sql, "batches", page.after)}
          ORDER BY created_at DESC, id DESC LIMIT ${page.limit + 1}`),
      // By primary key: a batch's line holds are named by the batch's `BatchLineStarted` events.
      money: (accountId, holdIds) => {
        const ids = holdIds.filter(isUuid)
        if (ids.length === 0) return Effect.succeed({ held: 0n, captured: 0n, refunded: 0n })
        return Effect.map(
          orUnavailable(sql<{ held: string; captured: string; refunded: string }>`
            SELECT coalesce(sum(amount) FILTER (WHERE status = 'pending'), 0)::text AS held,
              coalesce(sum(captured), 0)::text AS captured, coalesce(sum(refunded), 0)::text AS refunded
            FROM holds WHERE hold_id = ANY(${ids}::uuid[]) AND account_id = ${accountId}::uuid`),
          (rows) => ({
            held: BigInt(rows[0]?.held ?? 0),
            captured: BigInt(rows[0]?.captured ?? 0),
            refunded: BigInt(rows[0]?.refunded ?? 0)
          })
        )
      },
      // Two instances racing for one batch: the conditional upsert lets exactly one of them have it.
      claimDue: (owner, now, until, limit) =>
        Effect.map(
          orUnavailable(sql<{ batch_id: string }>`
            INSERT INTO batch_leases (batch_id, owner, lease_until)
            SELECT b.id, ${owner}, ${until} FROM batches b
            LEFT JOIN batch_leases l ON l.batch_id = b.id
            WHERE b.status IN ('validating', 'in_progress', 'finalizing', 'cancelling')
              AND (l.batch_id IS NULL OR l.lease_until <= ${now} OR l.owner = ${owner})
            ORDER BY least(coalesce(l.lease_until, b.created_at), ${now}) LIMIT ${limit}
            ON CONFLICT (batch_id) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until
              WHERE batch_leases.lease_until <= ${now} OR batch_leases.owner = EXCLUDED.owner
            RETURNING batch_id`),
          (rows) => rows.map((row) => row.batch_id)
        ),
      keepLease: (batchId, owner, until) =>
        Effect.map(
          orUnavailable(sql<{ batch_id: string }>`UPDATE batch_leases SET lease_until = ${until}
            WHERE batch_id = ${batchId} AND owner = ${owner} RETURNING batch_id`),
          (rows) => rows.length === 1
        ),
      dropLease: (batchId) => Effect.asVoid(orUnavailable(sql`DELETE FROM batch_leases WHERE batch_id = ${batchId}`))
    })
  })
)
