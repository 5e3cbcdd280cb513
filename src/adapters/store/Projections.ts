/**
 * The projections replay rebuilds, as a list: each names its tables (key and compared columns), keeps only the fold
 * state that can still change, and flushes finished rows into a schema through the same row builders and statements
 * the live writers use. Replay's loop (PgReplay.ts) knows nothing of any one of them: a new projection is one more
 * entry in `PROJECTIONS`, with a version constant (ProjectionVersions.ts rebuilds it in place when that goes up).
 *
 * Memory: the ledger core keeps each account's balances and its pending holds only; a hold leaves memory once its
 * resolution is complete (the account's stream has moved past the command that resolved it), a video task once
 * nothing more can happen to it, deposits and usage deltas after each flush. What stays is O(accounts + keys +
 * pending holds + live video tasks), never O(events).
 */
import { Effect } from "effect"
import type { SqlClient, SqlError } from "effect/sql"
import type { KeyEvent } from "../../domain/keys/ApiKey.ts"
import { type AccountState, evolve, type HoldState, initialState } from "../../domain/ledger/LedgerAccount.ts"
import { isLedgerEventType, type LedgerEvent } from "../../domain/ledger/LedgerEvent.ts"
import { parseDecimal } from "../../domain/Money.ts"
import {
  evolve as evolveVideo,
  isVideoEventType,
  type VideoTaskEvent,
  type VideoTaskState
} from "../../domain/video/VideoTask.ts"
import { type DepositRow, insertDeposits, upsertAccounts, upsertHolds } from "./LedgerProjection.ts"
import { recordsJson } from "./PgEventStore.ts"
import { addUsageSql, USAGE_COLUMNS, UsageTotals, usageDelta, usageRecords } from "./UsageProjection.ts"
import { upsertVideoTasksSql, VIDEO_TASK_COLUMNS, videoTaskRecords } from "./VideoProjection.ts"

/** Rows per statement when flushing, and the buffer size that triggers a flush between pages. */
export const FLUSH_ROWS = 5_000

/** An event as replay reads it: its data already upcast to the current schema version. */
export interface ReplayEvent {
  readonly streamName: string
  readonly streamPosition: bigint
  readonly type: string
  readonly data: unknown
}

/** What the ledger core adds to an account event: the state after it, and the hold it is about (after it). */
export interface LedgerStep {
  readonly accountId: string
  readonly event: LedgerEvent
  readonly state: AccountState
  readonly hold: HoldState | undefined
}

interface AccountEntry {
  readonly state: AccountState
  readonly version: bigint
}

interface Settling {
  readonly hold: HoldState
  readonly accountId: string
  readonly position: bigint
}

const holdIdOf = (event: LedgerEvent): string | undefined =>
  event.type === "AccountOpened" || event.type === "FundsDeposited" ? undefined : event.data.holdId

/**
 * The account fold every ledger projection reads: the decider's own `evolve`, with resolved holds moved out of the
 * account state (and deposit references dropped: only `decide` needs them) so memory stays bounded.
 */
export class LedgerCore {
  readonly accounts = new Map<string, AccountEntry>()
  /** Resolved holds whose command may still have events to come (settle = usage, then refund or overage). */
  private readonly settling = new Map<string, Settling>()

  step(event: ReplayEvent): LedgerStep | undefined {
    if (!event.streamName.startsWith("account-") || !isLedgerEventType(event.type)) return undefined
    const accountId = event.streamName.slice("account-".length)
    const ledgerEvent = { type: event.type, data: event.data } as LedgerEvent
    let before = this.accounts.get(accountId)?.state ?? initialState(accountId)
    const holdId = holdIdOf(ledgerEvent)
    const settling = holdId === undefined ? undefined : this.settling.get(holdId)
    if (holdId !== undefined && settling !== undefined && !before.holds.has(holdId)) {
      before = { ...before, holds: new Map(before.holds).set(holdId, settling.hold) }
    }
    let state = evolve(before, ledgerEvent)
    if (state.depositReferences.size > 0) state = { ...state, depositReferences: new Map() }
    const hold = holdId === undefined ? undefined : state.holds.get(holdId)
    if (hold !== undefined && hold.status !== "pending") {
      const holds = new Map(state.holds)
      holds.delete(hold.holdId)
      state = { ...state, holds }
      this.settling.set(hold.holdId, { hold, accountId, position: event.streamPosition })
    }
    this.accounts.set(accountId, { state, version: event.streamPosition })
    return { accountId, event: ledgerEvent, state, hold }
  }

  version(accountId: string): bigint {
    return this.accounts.get(accountId)?.version ?? 0n
  }

  /** A resolved hold is final once its account's stream has moved past the event that last touched it. */
  isFinal(accountId: string, position: bigint): boolean {
    return this.version(accountId) > position
  }

  /** Forgets the resolved holds that are final (`all`: at the end of a snapshot every command is complete). */
  prune(all: boolean): void {
    for (const [holdId, entry] of this.settling) {
      if (all || this.isFinal(entry.accountId, entry.position)) this.settling.delete(holdId)
    }
  }

  settlingHolds(): number {
    return this.settling.size
  }

  pendingHolds(): number {
    let count = 0
    for (const entry of this.accounts.values()) count += entry.state.holds.size
    return count
  }
}

export interface ProjectionTable {
  readonly name: string
  readonly key: ReadonlyArray<string>
  /** The columns replay compares and rewrites; anything else (operational: `last_used_at`) is left alone. */
  readonly columns: ReadonlyArray<string>
}

export interface ProjectionRun {
  readonly step: (event: ReplayEvent, ledger: LedgerStep | undefined) => void
  /** Writes the rows that can no longer change (every buffered row when `final`) into `schema` and forgets them. */
  readonly flush: (sql: SqlClient.SqlClient, schema: string, final: boolean) => Effect.Effect<void, SqlError.SqlError>
  /** Rows held in memory now (for tests and the benchmark's memory check). */
  readonly held: () => number
}

export interface Projection {
  readonly name: string
  /** Bump when the projection's rows change shape or meaning: the next start rebuilds it in place once. */
  readonly version: number
  readonly tables: ReadonlyArray<ProjectionTable>
  readonly start: (core: LedgerCore) => ProjectionRun
}

const columnsOf = (text: string) => text.split(",").map((c) => c.trim())

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

const accountsProjection: Projection = {
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

const holdsProjection: Projection = {
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

const depositsProjection: Projection = {
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

const keysProjection: Projection = {
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

const videoTasksProjection: Projection = {
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

const usageProjection: Projection = {
  name: "usage_daily",
  version: 1,
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

/** Every projection replay rebuilds and verifies, in the order their rows are written. */
export const PROJECTIONS: ReadonlyArray<Projection> = [
  accountsProjection,
  depositsProjection,
  holdsProjection,
  keysProjection,
  videoTasksProjection,
  usageProjection
]

/** The code's version of each projection: what `projection_versions` is brought up to at start. */
export const PROJECTION_VERSIONS: Readonly<Record<string, number>> = Object.fromEntries(
  PROJECTIONS.map((p) => [p.name, p.version])
)
