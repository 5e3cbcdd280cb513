/**
 * Postgres side of background responses (migration 0014): the response row is the task, claimed with
 * `FOR UPDATE SKIP LOCKED` so two instances never take the same one, leased to one worker at a time; its streamed
 * events are rows of `response_events`.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type BackgroundRun,
  BackgroundResponseStore,
  type ClaimedResponse,
  type StoredEvent
} from "../../app/ports/BackgroundResponseStore.ts"
import type { JsonObject } from "../../app/ports/ResponseStore.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { fromRow, insertResponse, RESPONSE_COLUMNS } from "./PgResponseStore.ts"
import { parsed, storableJson } from "./StoredJson.ts"

const eventsJson = (events: ReadonlyArray<StoredEvent>) =>
  storableJson(events.map((e) => ({ seq: e.seq, event: e.event })))

export const layer = Layer.effect(
  BackgroundResponseStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const appendEvents = (id: string, events: ReadonlyArray<StoredEvent>) =>
      events.length === 0
        ? Effect.void
        : sql`
            INSERT INTO response_events (response_id, seq, event)
            SELECT ${id}, t.seq, t.event FROM jsonb_to_recordset(${eventsJson(events)}::jsonb) AS t(seq integer, event jsonb)
            ON CONFLICT (response_id, seq) DO NOTHING`.pipe(Effect.asVoid)

    return BackgroundResponseStore.of({
      enqueue: (response, run, first) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              yield* insertResponse(sql, response, null)
              yield* sql`UPDATE responses SET run = ${storableJson(run)}::jsonb WHERE id = ${response.id}`
              yield* appendEvents(response.id, [first])
            })
          )
          .pipe(orUnavailable),
      claim: (owner, now, leaseUntil, limit) =>
        sql<Parameters<typeof fromRow>[0] & { run: BackgroundRun | string; attempts: number }>`
          UPDATE responses SET lease_owner = ${owner}, lease_until = ${leaseUntil}, attempts = attempts + 1,
            status = 'in_progress', response = jsonb_set(response, '{status}', '"in_progress"')
          WHERE id IN (
            SELECT id FROM responses
            WHERE background AND status IN ('queued', 'in_progress') AND (lease_until IS NULL OR lease_until < ${now})
              AND expires_at > ${now}
            ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
          RETURNING ${sql.literal(RESPONSE_COLUMNS)}, run, attempts`.pipe(
          Effect.map((rows) =>
            rows.map(
              (row): ClaimedResponse => ({ response: fromRow(row), run: parsed(row.run), attempts: row.attempts })
            )
          ),
          orUnavailable
        ),
      renew: (owner, ids, leaseUntil) =>
        (ids.length === 0
          ? Effect.succeed<ReadonlyArray<{ id: string }>>([])
          : sql<{ id: string }>`
              UPDATE responses SET lease_until = ${leaseUntil}
              WHERE id = ANY (${ids}::text[]) AND lease_owner = ${owner} AND status <> 'cancelled'
              RETURNING id`
        ).pipe(
          Effect.map((rows) => new Set(rows.map((row) => row.id))),
          orUnavailable
        ),
      requeue: (owner, id) =>
        sql`
          UPDATE responses SET lease_owner = NULL, lease_until = NULL, attempts = attempts - 1, status = 'queued',
            response = jsonb_set(response, '{status}', '"queued"')
          WHERE id = ${id} AND lease_owner = ${owner} AND status = 'in_progress'`.pipe(Effect.asVoid, orUnavailable),
      finish: (owner, id, response, last) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const rows = yield* sql<{ id: string }>`
                UPDATE responses SET status = ${String(response.status)}, response = ${storableJson(response)}::jsonb,
                  lease_owner = NULL, lease_until = NULL
                WHERE id = ${id} AND lease_owner = ${owner} AND status = 'in_progress'
                RETURNING id`
              if (rows.length === 0) return false
              if (last !== undefined) yield* appendEvents(id, [last])
              return true
            })
          )
          .pipe(orUnavailable),
      release: (owner, id) =>
        sql`UPDATE responses SET lease_owner = NULL, lease_until = NULL WHERE id = ${id} AND lease_owner = ${owner}`.pipe(
          Effect.asVoid,
          orUnavailable
        ),
      cancel: (accountId, id, response) =>
        sql<{ id: string }>`
          UPDATE responses SET status = 'cancelled', response = ${storableJson(response)}::jsonb, lease_until = NULL
          WHERE id = ${id} AND account_id = ${accountId}::uuid AND background AND status IN ('queued', 'in_progress')
          RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          orUnavailable
        ),
      appendEvents: (id, events) => appendEvents(id, events).pipe(orUnavailable),
      eventsAfter: (accountId, id, after, now) =>
        sql<{
          status: string
          response: JsonObject | string
          background: boolean
          live: boolean
          seq: number | null
          event: JsonObject | string | null
        }>`
          SELECT r.status, r.background,
            r.status IN ('queued', 'in_progress') OR (r.lease_owner IS NOT NULL AND r.lease_until > ${now}) AS live,
            CASE WHEN r.status IN ('queued', 'in_progress') THEN '{}'::jsonb
            ELSE r.response END AS response, e.seq, e.event
          FROM responses r LEFT JOIN response_events e ON e.response_id = r.id AND e.seq > ${after}
          WHERE r.id = ${id} AND r.account_id = ${accountId}::uuid AND r.expires_at > ${now}
          ORDER BY e.seq`.pipe(
          Effect.map((rows) => {
            const first = rows[0]
            if (first === undefined) return undefined
            return {
              status: first.status,
              background: first.background,
              live: first.live,
              response: parsed(first.response),
              events: rows.flatMap((row) =>
                row.seq === null || row.event === null ? [] : [{ seq: row.seq, event: parsed(row.event) }]
              )
            }
          }),
          orUnavailable
        )
    })
  })
)
