/**
 * The projections replay rebuilds, one per read-model table: accounts, holds, deposits, keys, video tasks and daily
 * usage, each with the rows its events make and the statement that writes them.
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import type { KeyEvent } from "../../domain/keys/ApiKey.ts"
import type { HoldState } from "../../domain/ledger/LedgerState.ts"
import { parseDecimal } from "../../domain/Money.ts"
import {
  evolve as evolveVideo,
  isVideoEventType,
  type VideoTaskEvent,
  type VideoTaskState
} from "../../domain/video/VideoTask.ts"
import { type DepositRow, insertDeposits, upsertAccounts, upsertHolds } from "./LedgerProjection.ts"
import { recordsJson } from "./EventAppends.ts"
import { addUsageSql, USAGE_COLUMNS, UsageTotals, usageDelta, usageRecords } from "./UsageProjection.ts"
import { upsertVideoTasksSql, VIDEO_TASK_COLUMNS, videoTaskRecords } from "./VideoProjection.ts"
import type { Projection, Settling } from "./Projections.ts"

const columnsOf = (text: string) => text.split(",").map((c) => c.trim())

/** Rows per statement when flushing, and the buffer size that triggers a flush between pages. */
export const FLUSH_ROWS = 5_000

/** Runs `write` on `rows` in statements of FLUSH_ROWS. */
export const inChunks = <A>(
  rows: ReadonlyArray<A>,
  write: (chunk: ReadonlyArray<A>) => Effect.Effect<unknown, SqlError.SqlError>
): Effect.Effect<void, SqlError.SqlError> =>
  Effect.forEach(
    Array.from({ length: Math.ceil(rows.length / FLUSH_ROWS) }, (_, i) =>
      rows.slice(i * FLUSH_ROWS, (i + 1) * FLUSH_ROWS)
    ),
    write,
    { discard: true }
  )

export const accountsProjection: Projection = {
  name: "accounts",
  version: 1,
  tables: [
    { name: "accounts", key: ["id"], columns: columnsOf("id, name, created_at, deposited, captured, held, version") }
  ],
  start: (core) => {
    const dirty = new Set<string>()
    return {
      step: (_event, ledger) => {
        if (ledger !== undefined) dirty.add(ledger.accountId)
      },
      // Accounts are few and change until the end: written once, at the end of the snapshot.
      flush: (sql, schema, final) => {
        if (!final) return Effect.void
        const rows = [...dirty].flatMap((id) => {
          const entry = core.accounts.get(id)
          return entry === undefined || !entry.state.exists ? [] : [entry]
        })
        dirty.clear()
        return inChunks(rows, (chunk) => upsertAccounts(sql, schema, chunk))
      },
      held: () => dirty.size
    }
  }
}

export const holdsProjection: Projection = {
  name: "holds",
  version: 1,
  tables: [
    {
      name: "holds",
      key: ["hold_id"],
      columns: columnsOf(
        "hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin, request_id, expires_at, placed_at, resolved_at"
      )
    }
  ],
  start: (core) => {
    const changed = new Map<string, Settling>()
    return {
      step: (event, ledger) => {
        if (ledger?.hold !== undefined) {
          changed.set(ledger.hold.holdId, {
            hold: ledger.hold,
            accountId: ledger.accountId,
            position: event.streamPosition
          })
        }
      },
      // A pending hold waits for its resolution (or the end); a resolved one is written once its command is over.
      flush: (sql, schema, final) => {
        if (!final && changed.size < FLUSH_ROWS) return Effect.void
        const ready: Array<HoldState> = []
        for (const [holdId, entry] of changed) {
          if (final || (entry.hold.status !== "pending" && core.isFinal(entry.accountId, entry.position))) {
            ready.push(entry.hold)
            changed.delete(holdId)
          }
        }
        return inChunks(ready, (chunk) => upsertHolds(sql, schema, chunk))
      },
      held: () => changed.size
    }
  }
}

export const depositsProjection: Projection = {
  name: "deposits",
  version: 1,
  tables: [
    { name: "deposits", key: ["account_id", "reference"], columns: columnsOf("account_id, reference, amount, at") }
  ],
  start: () => {
    let buffer: Array<DepositRow> = []
    return {
      step: (_event, ledger) => {
        if (ledger?.event.type === "FundsDeposited") {
          const data = ledger.event.data
          buffer.push({
            accountId: ledger.accountId,
            reference: data.reference,
            amount: parseDecimal(data.amount) as bigint,
            at: data.at
          })
        }
      },
      flush: (sql, schema, final) => {
        if (!final && buffer.length < FLUSH_ROWS) return Effect.void
        const rows = buffer
        buffer = []
        return inChunks(rows, (chunk) => insertDeposits(sql, schema, chunk))
      },
      held: () => buffer.length
    }
  }
}

interface KeyRecord {
  readonly id: string
  readonly account_id: string
  readonly name: string
  readonly prefix: string
  readonly key_hash: string
  readonly created_at: string
  readonly expires_at: string | null
  readonly models: ReadonlyArray<string> | null
  readonly spend_limit: bigint | null
  readonly rpm: number | null
  readonly tpm: number | null
  readonly concurrency: number | null
  readonly revoked_at: string | null
}

const KEY_COLUMNS =
  "id, account_id, name, prefix, key_hash, created_at, expires_at, models, spend_limit, rpm, tpm, concurrency, spent, held, revoked_at"

/** Whole key rows from events (the live path writes them piecewise: creation, revocation, spend with the ledger). */
const upsertKeysSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.api_keys (${sql.literal(KEY_COLUMNS)})
  SELECT id, account_id, name, prefix, decode(key_hash, 'hex'), created_at, expires_at, models, spend_limit, rpm, tpm,
    concurrency, spent, held, revoked_at
  FROM jsonb_to_recordset(${records}::jsonb) AS t(id uuid, account_id uuid, name text, prefix text, key_hash text,
    created_at timestamptz, expires_at timestamptz, models text[], spend_limit bigint, rpm integer, tpm integer,
    concurrency integer, spent bigint, held bigint, revoked_at timestamptz)
  ON CONFLICT (id) DO UPDATE SET spent = EXCLUDED.spent, held = EXCLUDED.held, revoked_at = EXCLUDED.revoked_at`

export const keysProjection: Projection = {
  name: "api_keys",
  // 2: rate limits (rpm, tpm, concurrency) from KeyCreated.
  version: 2,
  tables: [{ name: "api_keys", key: ["id"], columns: columnsOf(KEY_COLUMNS) }],
  start: (core) => {
    const keys = new Map<string, KeyRecord>()
    const dirty = new Set<string>()
    return {
      step: (event, ledger) => {
        const keyId = ledger?.hold?.keyId
        if (keyId !== undefined && keyId !== null) dirty.add(keyId)
        if (!event.streamName.startsWith("key-")) return
        const keyEvent = { type: event.type, data: event.data } as KeyEvent
        if (keyEvent.type === "KeyCreated") {
          const d = keyEvent.data
          keys.set(d.keyId, {
            id: d.keyId,
            account_id: d.accountId,
            name: d.name,
            prefix: d.prefix,
            key_hash: d.keyHash,
            created_at: d.at,
            expires_at: d.expiresAt,
            models: d.models,
            spend_limit: d.spendLimit === null ? null : (parseDecimal(d.spendLimit) as bigint),
            rpm: d.rateLimits?.rpm ?? null,
            tpm: d.rateLimits?.tpm ?? null,
            concurrency: d.rateLimits?.concurrency ?? null,
            revoked_at: null
          })
          dirty.add(d.keyId)
        } else if (keyEvent.type === "KeyRevoked") {
          const key = keys.get(keyEvent.data.keyId)
          if (key !== undefined) keys.set(key.id, { ...key, revoked_at: keyEvent.data.at })
          dirty.add(keyEvent.data.keyId)
        }
      },
      // Keys are few; their spend moves with every hold, so they are written once, at the end of the snapshot.
      flush: (sql, schema, final) => {
        if (!final) return Effect.void
        const rows = [...dirty].flatMap((id) => {
          const key = keys.get(id)
          if (key === undefined) return []
          const spend = core.accounts.get(key.account_id)?.state.keys.get(id) ?? { spent: 0n, held: 0n }
          const spendLimit = key.spend_limit === null ? null : String(key.spend_limit)
          return [{ ...key, spend_limit: spendLimit, spent: String(spend.spent), held: String(spend.held) }]
        })
        dirty.clear()
        return inChunks(rows, (chunk) => upsertKeysSql(sql, schema, recordsJson(chunk)))
      },
      held: () => keys.size
    }
  }
}

/** Nothing more can happen to a failed task, or to a completed one whose content is gone (or never was). */
export const videoTaskFinished = (state: VideoTaskState): boolean =>
  state.status === "failed" ||
  (state.status === "completed" && (state.content === null || state.contentExpiredAt !== null))

export const videoTasksProjection: Projection = {
  name: "video_tasks",
  version: 1,
  tables: [{ name: "video_tasks", key: ["id"], columns: columnsOf(VIDEO_TASK_COLUMNS) }],
  start: () => {
    const tasks = new Map<string, VideoTaskState>()
    const dirty = new Set<string>()
    return {
      step: (event) => {
        if (!event.streamName.startsWith("video-") || !isVideoEventType(event.type)) return
        const taskId = event.streamName.slice("video-".length)
        const state = evolveVideo(tasks.get(taskId), { type: event.type, data: event.data } as VideoTaskEvent)
        if (state !== undefined) {
          tasks.set(taskId, state)
          dirty.add(taskId)
        }
      },
      flush: (sql, schema, final) => {
        if (!final && dirty.size < FLUSH_ROWS) return Effect.void
        const rows = [...dirty].flatMap((id) => {
          const state = tasks.get(id)
          return state === undefined ? [] : [state]
        })
        dirty.clear()
        for (const state of rows) if (videoTaskFinished(state)) tasks.delete(state.taskId)
        return inChunks(rows, (chunk) => upsertVideoTasksSql(sql, schema, videoTaskRecords(chunk)))
      },
      held: () => tasks.size
    }
  }
}

export const usageProjection: Projection = {
  name: "usage_daily",
  // 2: the prompt-cache columns (migration 0011), rebuilt from the events' usage.
  version: 2,
  tables: [{ name: "usage_daily", key: ["account_id", "day", "key_id", "model"], columns: columnsOf(USAGE_COLUMNS) }],
  start: () => {
    let totals = new UsageTotals()
    return {
      step: (_event, ledger) => {
        if (ledger !== undefined) totals.add(usageDelta(ledger.event, ledger.hold))
      },
      // The statement adds to existing rows, so partial sums can be flushed at any time.
      flush: (sql, schema, final) => {
        if (!final && totals.size < FLUSH_ROWS) return Effect.void
        const rows = totals.values()
        totals = new UsageTotals()
        return inChunks(rows, (chunk) => addUsageSql(sql, schema, usageRecords(chunk)))
      },
      held: () => totals.size
    }
  }
}
