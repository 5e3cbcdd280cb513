/** Usage reports over `usage_daily` (UsageProjection.ts): one GROUP BY query, filters as parameters. */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  type RequestCharge,
  type RequestChargeQuery,
  type UsageLine,
  type UsageQuery,
  UsageReports
} from "../../app/UsageReports.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { NIL_UUID } from "./UsageProjection.ts"

interface Row {
  readonly day: string | null
  readonly model: string | null
  readonly key_id: string | null
  readonly requests: string
  readonly input_tokens: string
  readonly output_tokens: string
  readonly cache_read_tokens: string
  readonly cache_write_tokens: string
  readonly images: string
  readonly video_seconds: string
  readonly cost: string
}

interface ChargeRow {
  readonly hold_id: string
  readonly placed_at_us: string
  readonly request_id: string | null
  readonly model: string | null
  readonly key_id: string | null
  readonly status: string
  readonly amount: string
  readonly captured: string
  readonly placed_at: Date
  readonly resolved_at: Date | null
}

const COLUMN = { day: "u.day", model: "u.model", key: "u.key_id" } as const

export const layer = Layer.effect(
  UsageReports,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const report = (query: UsageQuery) =>
      Effect.gen(function* () {
        const filters = [
          query.accountId === undefined ? sql`TRUE` : sql`u.account_id = ${query.accountId}::uuid`,
          query.keyId === undefined ? sql`TRUE` : sql`u.key_id = ${query.keyId}::uuid`,
          query.model === undefined ? sql`TRUE` : sql`u.model = ${query.model}`,
          query.from === undefined ? sql`TRUE` : sql`u.day >= ${query.from}::date`,
          query.to === undefined ? sql`TRUE` : sql`u.day < ${query.to}::date`
        ]
        const groups = query.groupBy.map((g) => COLUMN[g])
        const select = (group: string, alias: string) =>
          groups.includes(group as (typeof groups)[number])
            ? sql.literal(`${group === "u.day" ? "to_char(u.day, 'YYYY-MM-DD')" : `${group}::text`} AS ${alias}`)
            : sql.literal(`NULL AS ${alias}`)
        const rows = yield* sql<Row>`
          SELECT ${select("u.day", "day")}, ${select("u.model", "model")}, ${select("u.key_id", "key_id")},
            coalesce(sum(u.requests), 0)::text AS requests, coalesce(sum(u.input_tokens), 0)::text AS input_tokens,
            coalesce(sum(u.output_tokens), 0)::text AS output_tokens,
            coalesce(sum(u.cache_read_tokens), 0)::text AS cache_read_tokens,
            coalesce(sum(u.cache_write_tokens), 0)::text AS cache_write_tokens, coalesce(sum(u.images), 0)::text AS images,
            coalesce(sum(u.video_seconds), 0)::text AS video_seconds, coalesce(sum(u.cost), 0)::text AS cost
          FROM usage_daily u
          WHERE ${sql.and(filters)}
          ${groups.length === 0 ? sql`` : sql`GROUP BY ${sql.literal(groups.join(", "))} ORDER BY ${sql.literal(groups.join(", "))}`}`
        return rows.map(
          (row): UsageLine => ({
            ...(query.groupBy.includes("day") ? { day: row.day ?? "" } : {}),
            ...(query.groupBy.includes("model") ? { model: row.model ?? "" } : {}),
            ...(query.groupBy.includes("key") ? { key: row.key_id === NIL_UUID ? null : row.key_id } : {}),
            requests: BigInt(row.requests),
            inputTokens: BigInt(row.input_tokens),
            outputTokens: BigInt(row.output_tokens),
            cacheReadTokens: BigInt(row.cache_read_tokens),
            cacheWriteTokens: BigInt(row.cache_write_tokens),
            images: BigInt(row.images),
            videoSeconds: BigInt(row.video_seconds),
            cost: BigInt(row.cost)
          })
        )
      }).pipe(orUnavailable)
    const requests = (query: RequestChargeQuery) =>
      sql<ChargeRow>`
        SELECT hold_id::text AS hold_id, request_id, model, key_id, status, amount::text AS amount,
          captured::text AS captured, placed_at, resolved_at,
          to_char(placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS placed_at_us
        FROM holds
        WHERE account_id = ${query.accountId}::uuid
          AND (${query.keyId ?? null}::uuid IS NULL OR key_id = ${query.keyId ?? null}::uuid)
          AND (${query.requestId ?? null}::text IS NULL OR request_id = ${query.requestId ?? null}::text)
          AND (${query.before ?? null}::timestamptz IS NULL OR placed_at < ${query.before ?? null}::timestamptz)
          ${
            query.after === undefined
              ? sql``
              : sql`AND (placed_at, hold_id) < (${query.after.placedAt}::timestamptz, ${query.after.holdId}::uuid)`
          }
        ORDER BY placed_at DESC, hold_id DESC
        LIMIT ${query.limit}`.pipe(
        Effect.map((rows) =>
          rows.map(
            (row): RequestCharge => ({
              requestId: row.request_id,
              model: row.model,
              keyId: row.key_id,
              status: row.status,
              held: BigInt(row.amount),
              cost: row.status === "settled" ? BigInt(row.captured) : 0n,
              createdAt: new Date(row.placed_at),
              resolvedAt: row.resolved_at === null ? null : new Date(row.resolved_at),
              cursor: { placedAt: row.placed_at_us, holdId: row.hold_id }
            })
          )
        ),
        orUnavailable
      )
    return UsageReports.of({ report, requests })
  })
)
