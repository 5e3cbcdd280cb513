/**
 * The `usage_daily` read model: per (day, account, key, model) the number of settled calls, their tokens (input, output,
 * and of the input what a vendor's prompt cache read and wrote), images and
 * video seconds, and what they cost (captured plus any overage charged). The ledger writer adds each batch's deltas
 * in its one statement; replay folds the same deltas from the events with the same function.
 */
import type { SqlClient } from "effect/sql"
import { addUsage, noUsage, type UsageCounts } from "../../app/UsageReports.ts"
import type { HoldState } from "../../domain/ledger/LedgerState.ts"
import type { LedgerEvent } from "../../domain/ledger/LedgerEvent.ts"
import { parseDecimal } from "../../domain/Money.ts"
import { recordsJson } from "./EventAppends.ts"

export const NIL_UUID = "00000000-0000-0000-0000-000000000000"

/** One `usage_daily` row: a day, account, key and model, and what their settled calls count. */
export interface UsageRow extends UsageCounts {
  readonly day: string
  readonly accountId: string
  readonly keyId: string
  readonly model: string
}

/** The cache split of a text call's usage object (the chat IR's fields); 0 for any other family. */
const cacheTokens = (usage: unknown): { readonly read: bigint; readonly write: bigint } => {
  const u = (typeof usage === "object" && usage !== null ? usage : {}) as Record<string, unknown>
  const count = (value: unknown) =>
    typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? BigInt(value) : 0n
  return { read: count(u.cacheReadTokens), write: count(u.cacheWriteTokens) }
}

const keyOf = (row: Pick<UsageRow, "day" | "accountId" | "keyId" | "model">) =>
  `${row.accountId}|${row.day}|${row.keyId}|${row.model}`

/** The usage delta one ledger event makes, given the hold it is about (undefined: the event changes no usage). */
export const usageDelta = (
  event: LedgerEvent,
  hold: Pick<HoldState, "keyId" | "model"> | undefined
): UsageRow | undefined => {
  if (hold === undefined) return undefined
  const base = {
    day: event.data.at.slice(0, 10),
    accountId: event.data.accountId,
    keyId: hold.keyId ?? NIL_UUID,
    model: hold.model ?? ""
  }
  switch (event.type) {
    case "UsageRecalculated": {
      const m = event.data.metrics
      const cache = cacheTokens(event.data.usage)
      return {
        ...base,
        requests: 1n,
        inputTokens: BigInt(m.inputTokens),
        outputTokens: BigInt(m.outputTokens),
        cacheReadTokens: cache.read,
        cacheWriteTokens: cache.write,
        images: BigInt(m.images),
        videoSeconds: BigInt(m.videoSeconds),
        cost: parseDecimal(event.data.captured) ?? 0n
      }
    }
    case "OverageCharged":
      return { ...base, ...noUsage, cost: parseDecimal(event.data.amount) ?? 0n }
    default:
      return undefined
  }
}

/** Sums deltas by group, so one statement never touches a row twice. */
export class UsageTotals {
  private readonly rows = new Map<string, UsageRow>()

  add(delta: UsageRow | undefined): void {
    if (delta === undefined) return
    const key = keyOf(delta)
    const known = this.rows.get(key)
    this.rows.set(key, known === undefined ? delta : addUsage(known, delta))
  }

  get size(): number {
    return this.rows.size
  }

  values(): ReadonlyArray<UsageRow> {
    return [...this.rows.values()]
  }
}

export const usageRecords = (rows: ReadonlyArray<UsageRow>): string =>
  recordsJson(
    rows.map((r) => ({
      day: r.day,
      account_id: r.accountId,
      key_id: r.keyId,
      model: r.model,
      requests: String(r.requests),
      input_tokens: String(r.inputTokens),
      output_tokens: String(r.outputTokens),
      cache_read_tokens: String(r.cacheReadTokens),
      cache_write_tokens: String(r.cacheWriteTokens),
      images: String(r.images),
      video_seconds: String(r.videoSeconds),
      cost: String(r.cost)
    }))
  )

export const USAGE_COLUMNS =
  "day, account_id, key_id, model, requests, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, " +
  "images, video_seconds, cost"

/** Adds the deltas to the rows (creating them); `schema` is "public" or a replay scratch schema. */
export const addUsageSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.usage_daily (${sql.literal(USAGE_COLUMNS)})
  SELECT ${sql.literal(USAGE_COLUMNS)}
  FROM jsonb_to_recordset(${records}::jsonb) AS t(day date, account_id uuid, key_id uuid, model text, requests bigint,
    input_tokens bigint, output_tokens bigint, cache_read_tokens bigint, cache_write_tokens bigint, images bigint,
    video_seconds bigint, cost bigint)
  ON CONFLICT (account_id, day, key_id, model) DO UPDATE SET
    requests = usage_daily.requests + EXCLUDED.requests,
    input_tokens = usage_daily.input_tokens + EXCLUDED.input_tokens,
    output_tokens = usage_daily.output_tokens + EXCLUDED.output_tokens,
    cache_read_tokens = usage_daily.cache_read_tokens + EXCLUDED.cache_read_tokens,
    cache_write_tokens = usage_daily.cache_write_tokens + EXCLUDED.cache_write_tokens,
    images = usage_daily.images + EXCLUDED.images,
    video_seconds = usage_daily.video_seconds + EXCLUDED.video_seconds,
    cost = usage_daily.cost + EXCLUDED.cost`
