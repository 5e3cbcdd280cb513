/**
 * Postgres side of alert webhooks (migration 0012): account endpoints and the delivery outbox. Deliveries are leased
 * with `FOR UPDATE SKIP LOCKED`, so instances sharing the database never send the same row at once, and a lease that
 * outlives its worker (a crash mid-send) expires and the row is due again.
 */
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import {
  type AlertDelivery,
  type AlertEndpoint,
  type AlertEvent,
  AlertStore,
  type DeliveryStatus
} from "../../app/ports/AlertStore.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { notifyChange, StoreNotifications } from "./StoreNotifications.ts"

interface EndpointRow {
  readonly id: string
  readonly account_id: string
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly secret: string
  readonly balance_below: string | null
  readonly created_at: Date
}

interface DeliveryRow {
  readonly id: string
  readonly event_id: string
  readonly event_type: string
  readonly endpoint: string
  readonly account_id: string | null
  readonly url: string
  readonly payload: AlertEvent | string
  readonly status: DeliveryStatus
  readonly attempts: number
  readonly next_attempt_at: Date
  readonly last_status: number | null
  readonly last_error: string | null
  readonly created_at: Date
  readonly delivered_at: Date | null
  readonly secret?: string | null
}

const endpointOf = (row: EndpointRow): AlertEndpoint => ({
  id: row.id,
  accountId: row.account_id,
  url: row.url,
  events: row.events,
  secret: row.secret,
  balanceBelow: row.balance_below === null ? null : BigInt(row.balance_below),
  createdAt: new Date(row.created_at)
})

const deliveryOf = (row: DeliveryRow): AlertDelivery => ({
  id: row.id,
  eventId: row.event_id,
  eventType: row.event_type,
  endpoint: row.endpoint,
  accountId: row.account_id,
  url: row.url,
  payload: typeof row.payload === "string" ? (JSON.parse(row.payload) as AlertEvent) : row.payload,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAt: new Date(row.next_attempt_at),
  lastStatus: row.last_status,
  lastError: row.last_error,
  createdAt: new Date(row.created_at),
  deliveredAt: row.delivered_at === null ? null : new Date(row.delivered_at)
})

const COLUMNS = `d.id, d.event_id, d.event_type, d.endpoint, d.account_id, d.url, d.payload, d.status, d.attempts,
  d.next_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at`

export const layer = Layer.effect(
  AlertStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const notifications = Option.getOrUndefined(yield* Effect.serviceOption(StoreNotifications))
    // Every instance forgets the account's endpoints when the change commits.
    const changed = (accountId: string | null) =>
      accountId === null ? Effect.void : Effect.asVoid(notifyChange(sql, "alert_endpoints", accountId))
    return AlertStore.of({
      changes:
        notifications === undefined
          ? undefined
          : {
              complete: notifications.complete,
              subscribe: (listener) => notifications.subscribe("alert_endpoints", listener)
            },
      addEndpoint: (endpoint) =>
        sql
          .withTransaction(
            Effect.andThen(
              sql`INSERT INTO alert_endpoints (id, account_id, url, events, secret, balance_below, created_at)
                VALUES (${endpoint.id}, ${endpoint.accountId}, ${endpoint.url},
                  ${endpoint.events as Array<string>}::text[], ${endpoint.secret},
                  ${endpoint.balanceBelow === null ? null : endpoint.balanceBelow.toString()},
                  ${endpoint.createdAt ?? new Date()})`,
              changed(endpoint.accountId)
            )
          )
          .pipe(Effect.asVoid, orUnavailable),
      endpointsOf: (accountId) =>
        sql<EndpointRow>`SELECT id, account_id, url, events, secret, balance_below::text AS balance_below, created_at
          FROM alert_endpoints WHERE account_id = ${accountId} ORDER BY created_at, id`.pipe(
          Effect.map((rows) => rows.map(endpointOf)),
          orUnavailable
        ),
      removeEndpoint: (id) =>
        sql
          .withTransaction(
            Effect.tap(
              sql<{ account_id: string | null }>`DELETE FROM alert_endpoints WHERE id = ${id} RETURNING account_id`,
              (rows) => Effect.forEach(rows, (row) => changed(row.account_id), { discard: true })
            )
          )
          .pipe(
            Effect.map((rows) => rows.length > 0),
            orUnavailable
          ),
      enqueue: (event, endpoints, now) =>
        endpoints.length === 0
          ? Effect.succeed(0)
          : sql<{ id: string }>`
              INSERT INTO alert_deliveries
                (id, event_id, event_type, endpoint, account_id, url, payload, status, next_attempt_at, created_at)
              SELECT e.id, ${event.id}, ${event.type}, e.endpoint, ${event.accountId}, e.url, ${JSON.stringify(event)}::jsonb,
                'pending', ${now}, ${now}
              FROM unnest(${endpoints.map(() => randomUUID())}::uuid[], ${endpoints.map((e) => e.id)}::text[],
                ${endpoints.map((e) => e.url)}::text[]) AS e(id, endpoint, url)
              ON CONFLICT (event_id, endpoint) DO NOTHING
              RETURNING id`.pipe(
              Effect.map((rows) => rows.length),
              orUnavailable
            ),
      leaseDue: (owner, now, until, limit, configured) =>
        sql<DeliveryRow>`
          WITH due AS (
            SELECT id FROM alert_deliveries
            WHERE status = 'pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
              AND (endpoint NOT LIKE 'config:%' OR endpoint = ANY (${configured as Array<string>}::text[]))
            ORDER BY next_attempt_at LIMIT ${limit}
            FOR UPDATE SKIP LOCKED),
          leased AS (
            UPDATE alert_deliveries d SET lease_owner = ${owner}, lease_until = ${until}, attempts = d.attempts + 1
            FROM due WHERE d.id = due.id
            RETURNING d.*)
          SELECT ${sql.unsafe(COLUMNS)}, e.secret FROM leased d
          LEFT JOIN alert_endpoints e ON e.id::text = d.endpoint`.pipe(
          Effect.map((rows) => rows.map((row) => ({ ...deliveryOf(row), storedSecret: row.secret ?? null }))),
          orUnavailable
        ),
      finish: (owner, id, outcome) =>
        (outcome._tag === "Delivered"
          ? sql`UPDATE alert_deliveries SET status = 'delivered', delivered_at = ${outcome.at},
              last_status = ${outcome.status}, last_error = NULL, lease_owner = NULL, lease_until = NULL
              WHERE id = ${id} AND lease_owner = ${owner}`
          : sql`UPDATE alert_deliveries SET status = ${outcome.retryAt === null ? "failed" : "pending"},
              next_attempt_at = coalesce(${outcome.retryAt}, next_attempt_at), last_status = ${outcome.status},
              last_error = ${outcome.error}, lease_owner = NULL, lease_until = NULL
              WHERE id = ${id} AND lease_owner = ${owner}`
        ).pipe(Effect.asVoid, orUnavailable),
      deliveries: (query) =>
        sql<DeliveryRow>`SELECT ${sql.unsafe(COLUMNS)} FROM alert_deliveries d
          WHERE (${query.accountId ?? null}::uuid IS NULL OR d.account_id = ${query.accountId ?? null}::uuid)
            AND (${query.status ?? null}::text IS NULL OR d.status = ${query.status ?? null}::text)
          ORDER BY d.created_at DESC, d.id LIMIT ${query.limit}`.pipe(
          Effect.map((rows) => rows.map(deliveryOf)),
          orUnavailable
        ),
      resend: (id, now) =>
        sql<{ id: string }>`UPDATE alert_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ${now},
          delivered_at = NULL, lease_owner = NULL, lease_until = NULL WHERE id = ${id} RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          orUnavailable
        )
    })
  })
)
