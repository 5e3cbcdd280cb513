/**
 * Projection versions: `projection_versions` records which version of each projection built its rows. At start, a
 * projection whose code version (Projections.ts) is higher than the stored one — or that has no row while events
 * exist, i.e. a database from before versions were recorded — is rebuilt in place once (PgReplay `applyProjections`),
 * and its new version is written in the same transaction as the rebuild, so a crash leaves it to the next start and
 * two instances starting together rebuild it once (the second sees the new version under the writer lock).
 */
import { Clock, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { applyProjections } from "./PgReplay.ts"
import { PROJECTION_VERSIONS } from "./Projections.ts"

/** The projections to rebuild, given the stored versions, the code's, and whether any event exists. Pure. */
export const outdatedProjections = (
  stored: ReadonlyMap<string, number>,
  code: Readonly<Record<string, number>>,
  hasEvents: boolean
): ReadonlyArray<string> =>
  Object.entries(code).flatMap(([name, version]) => {
    const current = stored.get(name)
    return (current === undefined ? hasEvents : current < version) ? [name] : []
  })

const readVersions = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ name: string; version: number }>`SELECT name, version FROM projection_versions`,
    (rows) => new Map(rows.map((r) => [r.name, r.version]))
  )

const recordVersions = (
  sql: SqlClient.SqlClient,
  versions: Readonly<Record<string, number>>,
  names: ReadonlyArray<string>
) =>
  Effect.gen(function* () {
    if (names.length === 0) return
    const at = new Date(yield* Clock.currentTimeMillis)
    yield* sql`
      INSERT INTO projection_versions (name, version, rebuilt_at)
      SELECT name, version, ${at} FROM unnest(${names}::text[], ${names.map((n) => versions[n])}::int[]) AS v(name, version)
      ON CONFLICT (name) DO UPDATE SET version = EXCLUDED.version, rebuilt_at = EXCLUDED.rebuilt_at
      WHERE projection_versions.version < EXCLUDED.version`
  })

/**
 * Brings every projection up to `versions` (the code's by default; tests inject others). Returns the names rebuilt.
 * A missing row on an empty database is recorded without a rebuild: there is nothing to fold.
 */
export const upgradeProjections = (
  versions: Readonly<Record<string, number>> = PROJECTION_VERSIONS
): Effect.Effect<ReadonlyArray<string>, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const stored = yield* readVersions(sql)
    const [{ any }] = yield* sql<{ any: boolean }>`SELECT EXISTS (SELECT 1 FROM events) AS any`
    const outdated = outdatedProjections(stored, versions, any)
    const fresh = Object.keys(versions).filter((name) => !stored.has(name) && !outdated.includes(name))
    yield* recordVersions(sql, versions, fresh)
    if (outdated.length === 0) return []
    yield* Effect.logInfo(`rebuilding projections in place: ${outdated.join(", ")}`)
    const report = yield* applyProjections({
      projections: outdated,
      // Another instance may have rebuilt them while this one folded: check again under the writer lock.
      stillNeeded: Effect.map(readVersions(sql), (now) => outdatedProjections(now, versions, true).length > 0),
      afterApply: recordVersions(sql, versions, outdated)
    })
    if (report === undefined) return []
    yield* Effect.logInfo(
      `projections rebuilt: ${outdated.join(", ")} (${report.events} events, writers paused ${report.pauseMs} ms)`
    )
    return outdated
  })

/** Start-up step: runs before the server serves (the layer is built with the services). */
export const layer = (versions: Readonly<Record<string, number>> = PROJECTION_VERSIONS) =>
  Layer.effectDiscard(upgradeProjections(versions))
