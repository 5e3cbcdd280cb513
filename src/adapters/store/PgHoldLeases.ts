/**
 * The SQL of hold leases (migration 0008): renewing the leases of this instance's live holds with their progress in
 * one statement per renewal round, finding the holds whose request is gone, and dropping leases of resolved holds.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { LeaseRenewal } from "../../app/LiveHolds.ts"
import type { HoldLeaseStore, OrphanHold } from "../../app/ports/LedgerWriter.ts"
import { storeUnavailable } from "./PgEventStore.ts"
import { type JsonValue, recordsJson } from "./EventAppends.ts"

/**
 * Renews `renewals` until `leaseUntil` (keeping a lease's last progress when this round read none) and deletes the
 * leases of holds that `ended`, in one statement.
 */
export const writeLeases = (
  sql: SqlClient.SqlClient,
  renewals: ReadonlyArray<LeaseRenewal>,
  ended: ReadonlyArray<string>,
  now: Date,
  leaseUntil: Date
) => {
  const rows = recordsJson(
    renewals.map((r) => ({
      hold_id: r.holdId,
      account_id: r.accountId,
      cost: r.progress === undefined ? null : String(r.progress.cost),
      // Usage is the JSON an event would carry; it is written as JSON text, like event data.
      usage: r.progress === undefined ? null : (r.progress.usage as JsonValue)
    }))
  )
  return sql`
    WITH dropped AS (DELETE FROM hold_leases WHERE hold_id = ANY(${ended}::uuid[]))
    INSERT INTO hold_leases (hold_id, account_id, lease_until, cost, usage, renewed_at)
    SELECT hold_id, account_id, ${leaseUntil}, coalesce(cost, 0), usage, ${now}
    FROM jsonb_to_recordset(${rows}::jsonb) AS r(hold_id uuid, account_id uuid, cost bigint, usage jsonb)
    ON CONFLICT (hold_id) DO UPDATE SET
      lease_until = EXCLUDED.lease_until,
      renewed_at = EXCLUDED.renewed_at,
      cost = CASE WHEN EXCLUDED.usage IS NULL THEN hold_leases.cost ELSE EXCLUDED.cost END,
      usage = coalesce(EXCLUDED.usage, hold_leases.usage)`
}

/**
 * Pending holds with an expiry whose request is gone: never leased and past their expiry, or leased and not renewed
 * in time (whatever their expiry says: the lease is the better sign of life).
 */
export const orphanHolds = (sql: SqlClient.SqlClient, now: Date, limit: number) =>
  sql<OrphanHold>`
    (SELECT h.hold_id, h.account_id, '0' AS cost, NULL::jsonb AS usage, false AS leased
     FROM holds h
     WHERE h.status = 'pending' AND h.expires_at IS NOT NULL AND h.expires_at <= ${now}
       AND NOT EXISTS (SELECT 1 FROM hold_leases l WHERE l.hold_id = h.hold_id)
     ORDER BY h.expires_at LIMIT ${limit})
    UNION ALL
    (SELECT h.hold_id, h.account_id, l.cost::text AS cost, l.usage, true AS leased
     FROM hold_leases l JOIN holds h ON h.hold_id = l.hold_id
     WHERE l.lease_until <= ${now} AND h.status = 'pending' AND h.expires_at IS NOT NULL
     ORDER BY l.lease_until LIMIT ${limit})`

/** Deletes the leases of holds that are resolved (their request ended, or the sweep resolved them). */
export const dropResolvedLeases = (sql: SqlClient.SqlClient) =>
  sql`DELETE FROM hold_leases l USING holds h WHERE h.hold_id = l.hold_id AND h.status <> 'pending'`

/** The hold-lease port over these statements; a database failure is the store being unavailable. */
export const makePgHoldLeases = (sql: SqlClient.SqlClient): HoldLeaseStore => ({
  write: (renewals, ended, now, leaseUntil) =>
    writeLeases(sql, renewals, ended, now, leaseUntil).pipe(
      Effect.asVoid,
      Effect.catchTag("SqlError", (e) => Effect.fail(storeUnavailable(e)))
    ),
  orphans: (now, limit) =>
    orphanHolds(sql, now, limit).pipe(Effect.catchTag("SqlError", (e) => Effect.fail(storeUnavailable(e)))),
  dropResolved: dropResolvedLeases(sql).pipe(
    Effect.asVoid,
    Effect.catchTag("SqlError", (e) => Effect.fail(storeUnavailable(e)))
  )
})
