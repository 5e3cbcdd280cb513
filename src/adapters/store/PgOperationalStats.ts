/** OperationalStats on Postgres/PGlite: small reads of the projections, at scrape time. */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { OperationalStats } from "../../app/OperationalStats.ts"
import { orUnavailable } from "./PgEventStore.ts"

export const layer = Layer.effect(
  OperationalStats,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const snapshot = Effect.gen(function* () {
      const [events] = yield* sql<{ position: bigint | null }>`SELECT max(global_position) AS position FROM events`
      // `holds_pending_expiry` is a partial index on exactly these rows.
      const [holds] = yield* sql<{ n: number; amount: bigint | null }>`
        SELECT count(*)::int AS n, sum(amount)::bigint AS amount FROM holds WHERE status = 'pending'`
      const videos = yield* sql<{ status: string; n: number }>`
        SELECT status, count(*)::int AS n FROM video_tasks GROUP BY status`
      const batches = yield* sql<{ status: string; n: number }>`
        SELECT status, count(*)::int AS n FROM batches GROUP BY status`
      return {
        eventsAppended: events.position ?? 0n,
        holdsOutstanding: { count: holds.n, amount: holds.amount ?? 0n },
        videoTasks: Object.fromEntries(videos.map((row) => [row.status, row.n])),
        batches: Object.fromEntries(batches.map((row) => [row.status, row.n]))
      }
    }).pipe(orUnavailable, Effect.withSpan("OperationalStats.snapshot"))
    return OperationalStats.of({ snapshot })
  })
)
