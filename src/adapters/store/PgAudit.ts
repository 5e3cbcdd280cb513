/**
 * Verification of the hash chains (EventHash.ts) on Postgres/PGlite, streamed in pages so memory stays flat in the
 * number of events: each stream's chain in (stream, position) order against the stored hashes and the stream head,
 * then the global chain in commit order through every stored checkpoint. Checkpoints only cover transactions older
 * than the oldest one still running (`pg_snapshot_xmin`), so a transaction that commits late can never fall before
 * an existing checkpoint and make an honest history look edited.
 */
import { Clock, Duration, Effect, Layer, Schedule } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { Audit, type AuditCheckpoint, type AuditReport, type BrokenLink } from "../../app/Audit.ts"
import { chainStep, eventHash } from "./EventHash.ts"
import { orUnavailable } from "./PgEventStore.ts"

const PAGE = 5_000

/** How often the global chain is extended and pinned by a new checkpoint. */
export const CHECKPOINT_INTERVAL_MILLIS = 10 * 60_000

interface HashRow {
  readonly stream_name: string
  readonly stream_position: string
  readonly global_position: string
  readonly event_id: string
  readonly event_type: string
  readonly schema_version: number
  readonly data: unknown
  readonly metadata: unknown
  readonly recorded_at: Date
  readonly hash: string | null
  readonly head_version: string
  readonly head_hash: string | null
}

interface ChainRow {
  readonly transaction_id: string
  readonly global_position: string
  readonly hash: string | null
}

interface CheckpointRow {
  readonly transaction_id: string
  readonly global_position: string
  readonly events: string
  readonly chain_hash: string
  readonly recorded_at: Date
}

const fieldsOf = (row: HashRow) => ({
  stream: row.stream_name,
  position: row.stream_position,
  eventId: row.event_id,
  type: row.event_type,
  schemaVersion: row.schema_version,
  data: row.data,
  metadata: row.metadata,
  recordedAt: row.recorded_at.toISOString()
})

const earlier = (a: BrokenLink | null, b: BrokenLink): BrokenLink =>
  a === null || BigInt(b.globalPosition) < BigInt(a.globalPosition) ? b : a

const toCheckpoint = (row: CheckpointRow): AuditCheckpoint => ({
  globalPosition: row.global_position,
  events: row.events,
  chainHash: row.chain_hash,
  recordedAt: row.recorded_at.toISOString()
})

/** Every stream chain, recomputed page by page; returns the earliest broken link (by global position). */
const verifyStreams = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    let after: { stream: string; position: string } | null = null
    let checked = 0
    let streams = 0
    let firstBroken: BrokenLink | null = null
    let current: {
      stream: string
      previous: string | null
      expected: bigint
      last: HashRow | null
      broken: boolean
    } | null = null
    const closeStream = () => {
      if (current === null || current.broken || current.last === null) return
      const last = current.last
      if (BigInt(last.head_version) !== BigInt(last.stream_position) || last.head_hash !== current.previous) {
        firstBroken = earlier(firstBroken, {
          stream: current.stream,
          position: last.stream_position,
          globalPosition: last.global_position,
          reason: "head_mismatch"
        })
      }
    }
    for (;;) {
      const cursor: { stream: string; position: string } | null = after
      const rows: ReadonlyArray<HashRow> = yield* sql<HashRow>`
        SELECT e.stream_name, e.stream_position::text, e.global_position::text, e.event_id, e.event_type,
          e.schema_version, e.data, e.metadata, e.recorded_at, encode(e.hash, 'hex') AS hash,
          s.version::text AS head_version, encode(s.head_hash, 'hex') AS head_hash
        FROM events e JOIN streams s ON s.stream_name = e.stream_name
        WHERE ${cursor === null ? sql`TRUE` : sql`(e.stream_name, e.stream_position) > (${cursor.stream}, ${cursor.position}::bigint)`}
        ORDER BY e.stream_name, e.stream_position LIMIT ${PAGE}`
      for (const row of rows) {
        if (current === null || current.stream !== row.stream_name) {
          closeStream()
          current = { stream: row.stream_name, previous: null, expected: 1n, last: null, broken: false }
          streams += 1
        }
        checked += 1
        if (current.broken) continue
        const position = BigInt(row.stream_position)
        const recomputed = eventHash(current.previous, fieldsOf(row))
        const reason =
          position !== current.expected ? "position_gap" : row.hash !== recomputed ? "hash_mismatch" : undefined
        if (reason !== undefined) {
          current.broken = true
          firstBroken = earlier(firstBroken, {
            stream: row.stream_name,
            position: row.stream_position,
            globalPosition: row.global_position,
            reason
          })
          continue
        }
        current.previous = recomputed
        current.expected = position + 1n
        current.last = row
      }
      if (rows.length < PAGE) break
      const last = rows[rows.length - 1]
      after = { stream: last.stream_name, position: last.stream_position }
    }
    closeStream()
    return { checked, streams, firstBroken: firstBroken as BrokenLink | null }
  })

/** Folds the global chain over events in commit order below `horizon` and after `from`, page by page. */
const foldChain = (
  sql: SqlClient.SqlClient,
  from: { transactionId: string; globalPosition: string; hash: string | null; events: bigint },
  horizon: string,
  visit: (row: ChainRow, chain: string, events: bigint) => Effect.Effect<boolean, SqlError.SqlError>
) =>
  Effect.gen(function* () {
    let cursor = { transactionId: from.transactionId, globalPosition: from.globalPosition }
    let chain = from.hash
    let events = from.events
    for (;;) {
      const rows = yield* sql<ChainRow>`
        SELECT e.transaction_id::text AS transaction_id, e.global_position::text AS global_position,
          encode(e.hash, 'hex') AS hash
        FROM events e
        WHERE e.transaction_id < ${horizon}::xid8
          AND (e.transaction_id, e.global_position) > (${cursor.transactionId}::xid8, ${cursor.globalPosition}::bigint)
        ORDER BY e.transaction_id, e.global_position LIMIT ${PAGE}`
      for (const row of rows) {
        chain = chainStep(chain, row.hash ?? "")
        events += 1n
        if (!(yield* visit(row, chain, events))) return { chain, events, cursor, stopped: true }
      }
      if (rows.length > 0) {
        const last = rows[rows.length - 1]
        cursor = { transactionId: last.transaction_id, globalPosition: last.global_position }
      }
      if (rows.length < PAGE) return { chain, events, cursor, stopped: false }
    }
  })

const horizonOf = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ xmin: string }>`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin`,
    (rows) => rows[0].xmin
  )

const insertCheckpoint = (
  sql: SqlClient.SqlClient,
  at: Date,
  cursor: { transactionId: string; globalPosition: string },
  events: bigint,
  chain: string
) =>
  Effect.map(
    sql<CheckpointRow>`
      INSERT INTO audit_checkpoints (transaction_id, global_position, events, chain_hash, recorded_at)
      VALUES (${cursor.transactionId}::bigint, ${cursor.globalPosition}::bigint, ${events.toString()}::bigint,
        decode(${chain}, 'hex'), ${at})
      RETURNING transaction_id::text, global_position::text, events::text, encode(chain_hash, 'hex') AS chain_hash,
        recorded_at`,
    (rows) => toCheckpoint(rows[0])
  )

const latestCheckpoint = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<CheckpointRow>`
      SELECT c.transaction_id::text, c.global_position::text, c.events::text,
        encode(c.chain_hash, 'hex') AS chain_hash, c.recorded_at
      FROM audit_checkpoints c ORDER BY c.transaction_id DESC, c.global_position DESC LIMIT 1`,
    (rows) => rows[0]
  )

/**
 * Gives a hash to events written before hashing existed (migration 0004), chaining each stream from its first event,
 * and sets the heads. Runs at start, before anything else writes; a no-op once every event has a hash.
 */
export const sealUnhashedEvents = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    const [pending] = yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM events WHERE hash IS NULL`
    if (pending.n === "0") return 0
    let sealed = 0
    let after: { stream: string; position: string } | null = null
    let previous: { stream: string; hash: string | null } = { stream: "", hash: null }
    for (;;) {
      const cursor: { stream: string; position: string } | null = after
      const rows: ReadonlyArray<HashRow> = yield* sql<HashRow>`
        SELECT e.stream_name, e.stream_position::text, e.global_position::text, e.event_id, e.event_type,
          e.schema_version, e.data, e.metadata, e.recorded_at, encode(e.hash, 'hex') AS hash,
          '0' AS head_version, NULL AS head_hash
        FROM events e
        WHERE ${cursor === null ? sql`TRUE` : sql`(e.stream_name, e.stream_position) > (${cursor.stream}, ${cursor.position}::bigint)`}
        ORDER BY e.stream_name, e.stream_position LIMIT ${PAGE}`
      const updates: Array<{ global_position: string; hash: string }> = []
      for (const row of rows) {
        if (previous.stream !== row.stream_name) previous = { stream: row.stream_name, hash: null }
        const hash = eventHash(previous.hash, fieldsOf(row))
        if (row.hash === null) updates.push({ global_position: row.global_position, hash })
        previous = { stream: row.stream_name, hash: row.hash ?? hash }
      }
      if (updates.length > 0) {
        yield* sql`UPDATE events e SET hash = decode(u.hash, 'hex')
          FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb) AS u(global_position bigint, hash text)
          WHERE e.global_position = u.global_position`
        sealed += updates.length
      }
      if (rows.length < PAGE) break
      const last = rows[rows.length - 1]
      after = { stream: last.stream_name, position: last.stream_position }
    }
    yield* sql`UPDATE streams s SET head_hash = e.hash FROM events e
      WHERE e.stream_name = s.stream_name AND e.stream_position = s.version AND s.head_hash IS NULL`
    return sealed
  })

export const layerWith = (options: { readonly checkpointMillis: number }) =>
  Layer.effect(
    Audit,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const checkpoint = Effect.gen(function* () {
        const horizon = yield* horizonOf(sql)
        const last = yield* latestCheckpoint(sql)
        const from =
          last === undefined
            ? { transactionId: "0", globalPosition: "0", hash: null, events: 0n }
            : {
                transactionId: last.transaction_id,
                globalPosition: last.global_position,
                hash: last.chain_hash,
                events: BigInt(last.events)
              }
        const folded = yield* foldChain(sql, from, horizon, () => Effect.succeed(true))
        if (folded.events === from.events || folded.chain === null) {
          return last === undefined ? null : toCheckpoint(last)
        }
        return yield* insertCheckpoint(
          sql,
          new Date(yield* Clock.currentTimeMillis),
          folded.cursor,
          folded.events,
          folded.chain
        )
      }).pipe(orUnavailable, Effect.withSpan("Audit.checkpoint"))

      const verify = Effect.gen(function* () {
        const started = yield* Clock.currentTimeMillis
        const streamsResult = yield* verifyStreams(sql)
        let firstBroken = streamsResult.firstBroken
        // The global chain through every stored checkpoint, in commit order.
        const stored = yield* sql<CheckpointRow>`
        SELECT c.transaction_id::text, c.global_position::text, c.events::text,
          encode(c.chain_hash, 'hex') AS chain_hash, c.recorded_at
        FROM audit_checkpoints c ORDER BY c.transaction_id, c.global_position`
        const horizon = yield* horizonOf(sql)
        let next = 0
        let verified = 0
        yield* foldChain(
          sql,
          { transactionId: "0", globalPosition: "0", hash: null, events: 0n },
          horizon,
          (row, chain) =>
            Effect.sync(() => {
              while (next < stored.length) {
                const point = stored[next]
                if (point.transaction_id !== row.transaction_id || point.global_position !== row.global_position) break
                if (point.chain_hash === chain) verified += 1
                else {
                  firstBroken = earlier(firstBroken, {
                    stream: "$global",
                    position: point.events,
                    globalPosition: row.global_position,
                    reason: "checkpoint_mismatch"
                  })
                }
                next += 1
              }
              return true
            })
        )
        // A checkpoint no event reaches any more: events at or before it were deleted.
        for (const point of stored.slice(next)) {
          firstBroken = earlier(firstBroken, {
            stream: "$global",
            position: point.events,
            globalPosition: point.global_position,
            reason: "checkpoint_mismatch"
          })
        }
        const latest = firstBroken === null ? yield* checkpoint : null
        const report: AuditReport = {
          ok: firstBroken === null,
          checked: streamsResult.checked,
          streams: streamsResult.streams,
          firstBroken,
          checkpoints: { verified, latest },
          durationMs: (yield* Clock.currentTimeMillis) - started
        }
        return report
      }).pipe(orUnavailable, Effect.withSpan("Audit.verify"))

      // The periodic checkpoint of the global chain; a verification also records one.
      yield* checkpoint.pipe(
        Effect.catch((error) => Effect.logWarning("audit checkpoint failed", error.message)),
        Effect.repeat(Schedule.spaced(Duration.millis(options.checkpointMillis))),
        Effect.delay(Duration.millis(options.checkpointMillis)),
        Effect.forkScoped
      )

      return Audit.of({ verify, checkpoint })
    })
  )

export const layer = layerWith({ checkpointMillis: CHECKPOINT_INTERVAL_MILLIS })
