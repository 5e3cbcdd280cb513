/**
 * Replay: folds the events, in global order and in pages, through the deciders' own `evolve`, writes the rows into a
 * scratch schema through the projection statements the live writers use (Projections.ts), and then either compares
 * scratch and live (`verify`) or replaces the live rows with the scratch ones (`apply`).
 *
 * Live databases. `verify` runs in ONE repeatable-read transaction: the events it folds and the live rows it compares
 * them with are the same snapshot (writers commit events and projections together), so a verify on a busy gateway is
 * exact and never reports a write that was half-seen. The scratch tables live in that transaction and vanish with it.
 * While it runs, catch-up readers (`readAll`) wait at its transaction id, as for any long writer.
 *
 * `apply` builds the scratch in a repeatable-read transaction too and keeps its snapshot. Then, in one short
 * transaction, it takes `LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE` (no event can be appended, and two applies
 * exclude each other; readers are not blocked), folds the events that snapshot did not see (`pg_visible_in_snapshot`,
 * exact even for transactions that committed out of position order), rewrites the live rows that differ and deletes
 * the ones the events do not produce, and commits. Every writer appends its events and its projection rows in one
 * transaction, so after the lock no uncommitted projection write is outstanding. Readers are served throughout (rows
 * are updated in place, never truncated); writers pause from the lock to the commit (`pauseMs`). Columns that are not
 * events (`api_keys.last_used_at`, the `video_task_leases` table) are not touched.
 */
import { Clock, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { randomUUID } from "node:crypto"
import {
  type ApplyReport,
  Replay,
  type ReplayMismatch,
  type ReplayOptions,
  type ReplayReport
} from "../../app/Replay.ts"
import type { StoreUnavailable } from "../../app/StoreErrors.ts"
import { upcastLedgerEvent } from "../../domain/ledger/Upcast.ts"
import { orUnavailable } from "./PgEventStore.ts"
import {
  LedgerCore,
  PROJECTIONS,
  type Projection,
  type ProjectionRun,
  type ProjectionTable,
  type ReplayEvent
} from "./Projections.ts"

export const PAGE = 10_000
const MISMATCH_LIMIT = 200

interface ReadRow {
  readonly global_position: bigint
  readonly stream_name: string
  readonly stream_position: bigint
  readonly event_type: string
  readonly schema_version: number
  readonly data: unknown
}

/** The fold of one rebuild: the ledger core and every projection's run, all bounded in memory. */
export class Rebuild {
  readonly core = new LedgerCore()
  readonly runs: ReadonlyArray<ProjectionRun>
  events = 0

  constructor(readonly projections: ReadonlyArray<Projection>) {
    this.runs = projections.map((p) => p.start(this.core))
  }

  step(event: ReplayEvent): void {
    this.events += 1
    const ledger = this.core.step(event)
    for (const run of this.runs) run.step(event, ledger)
  }

  flush(sql: SqlClient.SqlClient, schema: string, final: boolean): Effect.Effect<void, SqlError.SqlError> {
    this.core.prune(final)
    return Effect.forEach(this.runs, (run) => run.flush(sql, schema, final), { discard: true })
  }

  /** Rows the fold holds in memory now. */
  held(): number {
    return this.core.accounts.size + this.core.pendingHolds() + this.runs.reduce((n, run) => n + run.held(), 0)
  }
}

export const selectProjections = (names: ReadonlyArray<string> | undefined): ReadonlyArray<Projection> =>
  names === undefined ? PROJECTIONS : PROJECTIONS.filter((p) => names.includes(p.name))

const tablesOf = (projections: ReadonlyArray<Projection>): ReadonlyArray<ProjectionTable> =>
  projections.flatMap((p) => p.tables)

const list = (columns: ReadonlyArray<string>) => columns.join(", ")

const createScratch = (sql: SqlClient.SqlClient, schema: string, tables: ReadonlyArray<ProjectionTable>) =>
  Effect.gen(function* () {
    yield* sql`CREATE SCHEMA ${sql(schema)}`
    for (const table of tables) {
      // Unlogged: the scratch is rebuilt from the events whenever it is needed, so it need not survive a crash.
      yield* sql`CREATE UNLOGGED TABLE ${sql(schema)}.${sql(table.name)} (LIKE public.${sql(table.name)} INCLUDING ALL)`
    }
  })

const repeatableRead = (sql: SqlClient.SqlClient) => sql.unsafe("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")

/**
 * Folds the events `where` selects (a condition on `events`), in global-position order, page by page, flushing what
 * is final after each page. Inside a repeatable-read transaction the set is one snapshot, so keyset paging on the
 * position is exact.
 */
const foldEvents = (
  sql: SqlClient.SqlClient,
  rebuild: Rebuild,
  schema: string,
  where: ReturnType<SqlClient.SqlClient["literal"]>,
  progress: (events: number) => Effect.Effect<void>
) =>
  Effect.gen(function* () {
    let after = 0n
    for (;;) {
      const rows = yield* sql<ReadRow>`
        SELECT global_position, stream_name, stream_position, event_type, schema_version, data FROM events
        WHERE global_position > ${after} AND ${where}
        ORDER BY global_position LIMIT ${PAGE}`
      for (const row of rows) {
        rebuild.step({
          streamName: row.stream_name,
          streamPosition: row.stream_position,
          type: row.event_type,
          data: upcastLedgerEvent(row.event_type, row.schema_version, row.data)
        })
      }
      yield* rebuild.flush(sql, schema, false)
      yield* progress(rebuild.events)
      if (rows.length < PAGE) break
      after = rows[rows.length - 1].global_position
    }
    yield* rebuild.flush(sql, schema, true)
  })

const keyText = (sql: SqlClient.SqlClient, table: ProjectionTable) =>
  sql.literal(`concat_ws('/', ${table.key.map((k) => `${k}::text`).join(", ")})`)

/** Rows that differ between live and scratch, at most MISMATCH_LIMIT per table, paired by key. */
const compare = (sql: SqlClient.SqlClient, schema: string, tables: ReadonlyArray<ProjectionTable>) =>
  Effect.gen(function* () {
    const mismatches: Array<ReplayMismatch> = []
    const counts: Record<string, number> = {}
    for (const table of tables) {
      const columns = sql.literal(list(table.columns))
      const rows = yield* sql<{ side: string; k: string; row: unknown }>`
        (SELECT 'live' AS side, ${keyText(sql, table)} AS k, to_jsonb(l) AS row
           FROM (SELECT ${columns} FROM public.${sql(table.name)}
                 EXCEPT SELECT ${columns} FROM ${sql(schema)}.${sql(table.name)}) l)
        UNION ALL
        (SELECT 'replayed' AS side, ${keyText(sql, table)} AS k, to_jsonb(r) AS row
           FROM (SELECT ${columns} FROM ${sql(schema)}.${sql(table.name)}
                 EXCEPT SELECT ${columns} FROM public.${sql(table.name)}) r)
        ORDER BY k LIMIT ${MISMATCH_LIMIT}`
      const byKey = new Map<string, ReplayMismatch>()
      for (const row of rows) {
        const current = byKey.get(row.k) ?? { table: table.name, key: row.k, live: null, replayed: null }
        byKey.set(row.k, row.side === "live" ? { ...current, live: row.row } : { ...current, replayed: row.row })
      }
      mismatches.push(...byKey.values())
      const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(schema)}.${sql(table.name)}`
      counts[table.name] = count.n
    }
    return { mismatches, counts }
  })

/** Makes the live table equal to the scratch one on its compared columns; other columns keep their values. */
const replaceLive = (sql: SqlClient.SqlClient, schema: string, table: ProjectionTable) =>
  Effect.gen(function* () {
    const columns = sql.literal(list(table.columns))
    const matches = sql.literal(table.key.map((k) => `s.${k} = l.${k}`).join(" AND "))
    const updates = table.columns.filter((c) => !table.key.includes(c))
    const [deleted] = yield* sql<{ n: number }>`
      WITH removed AS (
        DELETE FROM public.${sql(table.name)} l
        WHERE NOT EXISTS (SELECT 1 FROM ${sql(schema)}.${sql(table.name)} s WHERE ${matches}) RETURNING 1)
      SELECT count(*)::int AS n FROM removed`
    const [written] = yield* sql<{ n: number }>`
      WITH written AS (
        INSERT INTO public.${sql(table.name)} (${columns})
        SELECT ${columns} FROM ${sql(schema)}.${sql(table.name)}
        EXCEPT SELECT ${columns} FROM public.${sql(table.name)}
        ON CONFLICT (${sql.literal(list(table.key))}) DO UPDATE SET
          ${sql.literal(updates.map((c) => `${c} = EXCLUDED.${c}`).join(", "))}
        RETURNING 1)
      SELECT count(*)::int AS n FROM written`
    return { written: written.n, deleted: deleted.n }
  })

const scratchName = () => `replay_${randomUUID().replaceAll("-", "")}`

const rate = (events: number, ms: number) => (ms <= 0 ? events : Math.round((events * 1000) / ms))

/**
 * The progress callback for one rebuild, with the snapshot's event count as the total. The count is one more scan of
 * `events`, so it is taken only when someone listens; it must run inside the snapshot's transaction.
 */
const progressOf = (sql: SqlClient.SqlClient, options: ReplayOptions | undefined, started: number) =>
  Effect.gen(function* () {
    const onProgress = options?.onProgress
    if (onProgress === undefined) return (_events: number) => Effect.void
    const [{ total }] = yield* sql<{ total: number }>`SELECT count(*)::int AS total FROM events`
    return (events: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) =>
        onProgress({ events, total: Math.max(total, events), elapsedMs: now - started })
      )
  })

/** Rebuilds the projections from one snapshot and compares them with the live tables of that same snapshot. */
export const verifyProjections = (
  options?: ReplayOptions
): Effect.Effect<ReplayReport, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const projections = selectProjections(options?.projections)
    const tables = tablesOf(projections)
    const schema = scratchName()
    const started = yield* Clock.currentTimeMillis
    const rebuild = new Rebuild(projections)
    const { mismatches, counts } = yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* repeatableRead(sql)
        yield* createScratch(sql, schema, tables)
        yield* foldEvents(sql, rebuild, schema, sql.literal("TRUE"), yield* progressOf(sql, options, started))
        const result = yield* compare(sql, schema, tables)
        yield* sql`DROP SCHEMA ${sql(schema)} CASCADE`
        return result
      })
    )
    const durationMs = (yield* Clock.currentTimeMillis) - started
    return {
      ok: mismatches.length === 0,
      events: rebuild.events,
      accounts: rebuild.core.accounts.size,
      mismatches,
      durationMs,
      eventsPerSecond: rate(rebuild.events, durationMs),
      tables: counts
    }
  })

export interface ApplyHooks {
  /** Runs under the writer lock before anything is rewritten; false → nothing is applied (rolled back). */
  readonly stillNeeded?: Effect.Effect<boolean, SqlError.SqlError> | undefined
  /** Runs under the writer lock after the rewrite, in the same transaction (records projection versions). */
  readonly afterApply?: Effect.Effect<void, SqlError.SqlError> | undefined
}

/** Rebuilds the projections into a scratch schema, then swaps the differences into the live tables (see above). */
export const applyProjections = (
  options?: ReplayOptions & ApplyHooks
): Effect.Effect<ApplyReport | undefined, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const projections = selectProjections(options?.projections)
    const tables = tablesOf(projections)
    const schema = scratchName()
    const started = yield* Clock.currentTimeMillis
    const rebuild = new Rebuild(projections)
    let progress = (_events: number): Effect.Effect<void> => Effect.void
    return yield* Effect.acquireUseRelease(
      Effect.void,
      () =>
        Effect.gen(function* () {
          const { snapshot, mismatches } = yield* sql.withTransaction(
            Effect.gen(function* () {
              yield* repeatableRead(sql)
              const [row] = yield* sql<{ snapshot: string }>`SELECT pg_current_snapshot()::text AS snapshot`
              yield* createScratch(sql, schema, tables)
              progress = yield* progressOf(sql, options, started)
              yield* foldEvents(sql, rebuild, schema, sql.literal("TRUE"), progress)
              // What differed, as of the snapshot: found here so that the writer pause below only catches up and
              // rewrites.
              const { mismatches } = yield* compare(sql, schema, tables)
              return { snapshot: row.snapshot, mismatches }
            })
          )
          const built = rebuild.events
          let lockedAt = 0
          const applied = yield* sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`LOCK TABLE events IN SHARE ROW EXCLUSIVE MODE`
              lockedAt = yield* Clock.currentTimeMillis
              if (options?.stillNeeded !== undefined && !(yield* options.stillNeeded)) return undefined
              yield* foldEvents(
                sql,
                rebuild,
                schema,
                sql`transaction_id >= pg_snapshot_xmin(${snapshot}::pg_snapshot)
                  AND NOT pg_visible_in_snapshot(transaction_id, ${snapshot}::pg_snapshot)`,
                progress
              )
              const repaired: Record<string, { written: number; deleted: number }> = {}
              for (const table of tables) repaired[table.name] = yield* replaceLive(sql, schema, table)
              if (options?.afterApply !== undefined) yield* options.afterApply
              return repaired
            })
          )
          if (applied === undefined) return undefined
          const finished = yield* Clock.currentTimeMillis
          const counts: Record<string, number> = {}
          for (const table of tables) {
            const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM public.${sql(table.name)}`
            counts[table.name] = count.n
          }
          const durationMs = finished - started
          return {
            ok: true,
            events: rebuild.events,
            accounts: rebuild.core.accounts.size,
            mismatches,
            durationMs,
            eventsPerSecond: rate(rebuild.events, durationMs),
            tables: counts,
            repaired: applied,
            caughtUp: rebuild.events - built,
            pauseMs: finished - lockedAt
          } satisfies ApplyReport
        }),
      () => sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`.pipe(Effect.ignore)
    )
  })

export const layer = Layer.effect(
  Replay,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const withSql = <A>(
      effect: Effect.Effect<A, SqlError.SqlError, SqlClient.SqlClient>
    ): Effect.Effect<A, StoreUnavailable> => orUnavailable(Effect.provideService(effect, SqlClient.SqlClient, sql))
    const verifyWith = (options: ReplayOptions) =>
      withSql(verifyProjections(options)).pipe(Effect.withSpan("Replay.verify"))
    const apply = (options?: ReplayOptions) =>
      withSql(applyProjections(options)).pipe(
        Effect.map((report) => report as ApplyReport),
        Effect.withSpan("Replay.apply")
      )
    return Replay.of({ verify: verifyWith({}), verifyWith, apply })
  })
)
