/**
 * Commits a batch of ledger commands in ONE transaction (group commit): lock the heads of every account stream the
 * batch touches, load only the state those commands need, run the pure decider command by command (each rule checked
 * per event, in order, on the state left by the previous command), append all accepted events and write the
 * projections. One hot account then costs one transaction per batch instead of one per request (stack-notes §0b).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type StoreUnavailable, StreamVersionConflict } from "../../app/StoreErrors.ts"
import { accountStream } from "../../domain/Ids.ts"
import {
  type AccountState,
  type Decision,
  decide,
  evolve,
  type HoldState,
  initialState,
  type KeySpend,
  type LedgerCommand
} from "../../domain/ledger/LedgerAccount.ts"
import {
  accountRecords,
  type DepositRow,
  depositRecords,
  holdRecords,
  insertDepositsSql,
  keySpendRecords,
  updateKeySpendSql,
  upsertAccountsSql,
  upsertHoldsSql
} from "./LedgerProjection.ts"
import {
  conflictOnUniqueViolation,
  EVENT_RECORD_COLUMNS,
  lockHeads,
  planAppends,
  recordsJson,
  type StreamAppend,
  storeUnavailable
} from "./PgEventStore.ts"

export interface BatchItem {
  readonly command: LedgerCommand
  readonly metadata: Record<string, unknown>
}

/** Bigints travel as text inside the aggregated JSON: JSON numbers lose precision above 2^53. */
interface Loaded {
  readonly accounts: ReadonlyArray<{
    id: string
    name: string
    created_at: string
    deposited: string
    captured: string
    held: string
  }> | null
  readonly holds: ReadonlyArray<{
    hold_id: string
    account_id: string
    key_id: string | null
    amount: string
    status: HoldState["status"]
    captured: string
    refunded: string
    model: string | null
    plugin: string | null
    request_id: string | null
    expires_at: string | null
    placed_at: string
    resolved_at: string | null
  }> | null
  readonly keys: ReadonlyArray<{ id: string; account_id: string; spent: string; held: string }> | null
  readonly refs: ReadonlyArray<{ account_id: string; reference: string; amount: string }> | null
}

const iso = (value: string | null): string | null => (value === null ? null : new Date(value).toISOString())

/** Settle and release need the hold; a new hold's id is fresh (and unique in the table), so it needs nothing. */
const heldIdOf = (command: LedgerCommand): string | undefined =>
  command.type === "SettleHold" || command.type === "ReleaseHold" ? command.holdId : undefined

/**
 * Everything the batch's commands need, in ONE statement (after the heads are locked, so it reads committed state):
 * the accounts, the holds being resolved, the keys whose spend moves, and the deposit references already used.
 */
const loadStates = (sql: SqlClient.SqlClient, items: ReadonlyArray<BatchItem>, versions: ReadonlyMap<string, bigint>) =>
  Effect.gen(function* () {
    const accountIds = [...new Set(items.map((i) => i.command.accountId))]
    const holdIds = [...new Set(items.flatMap((i) => heldIdOf(i.command) ?? []))]
    const keyIds = [
      ...new Set(
        items.flatMap((i) => (i.command.type === "PlaceHold" && i.command.keyId !== null ? [i.command.keyId] : []))
      )
    ]
    const deposits = items.flatMap((i) => (i.command.type === "Deposit" ? [i.command] : []))
    const [loaded] = yield* sql<Loaded>`
      SELECT
        (SELECT json_agg(json_build_object('id', a.id, 'name', a.name, 'created_at', a.created_at,
           'deposited', a.deposited::text, 'captured', a.captured::text, 'held', a.held::text))
         FROM accounts a WHERE a.id = ANY(${accountIds}::uuid[])) AS accounts,
        (SELECT json_agg(json_build_object('hold_id', h.hold_id, 'account_id', h.account_id, 'key_id', h.key_id,
           'amount', h.amount::text, 'status', h.status, 'captured', h.captured::text, 'refunded', h.refunded::text,
           'model', h.model, 'plugin', h.plugin, 'request_id', h.request_id, 'expires_at', h.expires_at,
           'placed_at', h.placed_at, 'resolved_at', h.resolved_at))
         FROM holds h WHERE h.hold_id = ANY(${holdIds}::uuid[])) AS holds,
        (SELECT json_agg(json_build_object('id', k.id, 'account_id', k.account_id, 'spent', k.spent::text,
           'held', k.held::text))
         FROM api_keys k WHERE k.id = ANY(${keyIds}::uuid[])
           OR k.id IN (SELECT key_id FROM holds WHERE hold_id = ANY(${holdIds}::uuid[]))) AS keys,
        (SELECT json_agg(json_build_object('account_id', d.account_id, 'reference', d.reference,
           'amount', d.amount::text))
         FROM deposits d JOIN unnest(${deposits.map((d) => d.accountId)}::uuid[], ${deposits.map((d) => d.reference)}::text[])
           AS q(account_id, reference) ON d.account_id = q.account_id AND d.reference = q.reference) AS refs`

    const states = new Map<string, AccountState>()
    for (const id of accountIds) states.set(id, initialState(id))
    for (const row of loaded.accounts ?? []) {
      states.set(row.id, {
        ...initialState(row.id),
        exists: versions.has(row.id),
        name: row.name,
        createdAt: new Date(row.created_at).toISOString(),
        deposited: BigInt(row.deposited),
        captured: BigInt(row.captured),
        held: BigInt(row.held)
      })
    }
    const patch = (accountId: string, change: (state: AccountState) => AccountState) => {
      const state = states.get(accountId)
      if (state !== undefined) states.set(accountId, change(state))
    }
    for (const row of loaded.holds ?? []) {
      const hold: HoldState = {
        holdId: row.hold_id,
        accountId: row.account_id,
        keyId: row.key_id,
        amount: BigInt(row.amount),
        status: row.status,
        captured: BigInt(row.captured),
        refunded: BigInt(row.refunded),
        model: row.model,
        plugin: row.plugin,
        requestId: row.request_id,
        expiresAt: iso(row.expires_at),
        placedAt: new Date(row.placed_at).toISOString(),
        resolvedAt: iso(row.resolved_at)
      }
      patch(row.account_id, (s) => ({ ...s, holds: new Map(s.holds).set(row.hold_id, hold) }))
    }
    for (const row of loaded.keys ?? []) {
      const spend = { spent: BigInt(row.spent), held: BigInt(row.held) }
      patch(row.account_id, (s) => ({ ...s, keys: new Map(s.keys).set(row.id, spend) }))
    }
    for (const row of loaded.refs ?? []) {
      patch(row.account_id, (s) => ({
        ...s,
        depositReferences: new Map(s.depositReferences).set(row.reference, BigInt(row.amount))
      }))
    }
    return states
  })

/**
 * Decides and commits the batch in three round trips inside one transaction: lock the heads, load the state, write
 * everything (events, heads, projections) in one statement. A rejected command leaves no trace and does not affect
 * the others; if the transaction fails, nothing of the batch is written and every command fails with the same error.
 */
export const commitBatch = (
  items: ReadonlyArray<BatchItem>,
  now: Date,
  newEventId: () => string
): Effect.Effect<ReadonlyArray<Decision>, StoreUnavailable | StreamVersionConflict, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    return yield* sql.withTransaction(
      Effect.gen(function* () {
        const accountIds = [...new Set(items.map((i) => i.command.accountId))].sort()
        // Lock the stream heads first (name order) so concurrent batches on other instances queue, never deadlock.
        const heads = yield* lockHeads(sql, accountIds.map(accountStream))
        const versions = new Map<string, bigint>()
        for (const id of accountIds) {
          const version = heads.get(accountStream(id))
          if (version !== undefined && version > 0n) versions.set(id, version)
        }
        const states = yield* loadStates(sql, items, versions)
        const decisions: Array<Decision> = []
        const appends = new Map<string, Array<StreamAppend["events"][number]>>()
        const touchedHolds = new Map<string, HoldState>()
        const touchedKeys = new Map<string, KeySpend>()
        const newDeposits: Array<DepositRow> = []
        for (const item of items) {
          const accountId = item.command.accountId
          const before = states.get(accountId) as AccountState
          const decision = decide(before, item.command)
          decisions.push(decision)
          if (decision._tag === "Rejected" || decision.events.length === 0) continue
          let state = before
          const stream = accountStream(accountId)
          const pending = appends.get(stream) ?? []
          appends.set(stream, pending)
          for (const event of decision.events) {
            state = evolve(state, event)
            pending.push({ eventId: newEventId(), type: event.type, data: event.data, metadata: item.metadata })
            if (event.type === "FundsDeposited") {
              newDeposits.push({
                accountId,
                reference: event.data.reference,
                amount: state.depositReferences.get(event.data.reference) as bigint,
                at: event.data.at
              })
            }
            if (event.type !== "AccountOpened" && event.type !== "FundsDeposited") {
              const hold = state.holds.get(event.data.holdId) as HoldState
              touchedHolds.set(hold.holdId, hold)
              if (hold.keyId !== null && state.keys.has(hold.keyId)) {
                touchedKeys.set(hold.keyId, state.keys.get(hold.keyId) as KeySpend)
              }
            }
          }
          states.set(accountId, state)
        }
        if (appends.size === 0) return decisions
        const plan = planAppends(
          [...appends].map(([stream, events]) => ({
            stream,
            expected: heads.get(stream) ?? "no_stream",
            events
          })),
          heads,
          now
        )
        if (plan instanceof StreamVersionConflict) return yield* plan
        const accountRows = [...appends.keys()].map((stream) => ({
          state: states.get(stream.slice("account-".length)) as AccountState,
          version: plan.versions.get(stream) as bigint
        }))
        const writes = [
          sql`INSERT INTO events (stream_name, stream_position, event_id, event_type, schema_version, data, metadata,
                recorded_at)
              SELECT * FROM jsonb_to_recordset(${recordsJson(plan.records)}::jsonb) AS t(${sql.literal(EVENT_RECORD_COLUMNS)})`,
          sql`INSERT INTO streams (stream_name, version)
              SELECT * FROM jsonb_to_recordset(${recordsJson([...plan.versions].map(([name, version]) => ({ name, version })))}::jsonb)
                AS h(name text, version bigint)
              ON CONFLICT (stream_name) DO UPDATE SET version = EXCLUDED.version`,
          upsertAccountsSql(sql, "public", accountRecords(accountRows)),
          ...(touchedHolds.size > 0 ? [upsertHoldsSql(sql, "public", holdRecords([...touchedHolds.values()]))] : []),
          ...(touchedKeys.size > 0 ? [updateKeySpendSql(sql, "public", keySpendRecords([...touchedKeys]))] : []),
          ...(newDeposits.length > 0 ? [insertDepositsSql(sql, "public", depositRecords(newDeposits))] : [])
        ]
        // One statement: data-modifying CTEs all see the same snapshot and commit (or fail) together.
        yield* sql`WITH ${sql.csv(writes.map((write, index) => sql`w${sql.literal(String(index))} AS (${write})`))} SELECT 1`.pipe(
          conflictOnUniqueViolation(accountIds.join(","))
        )
        return decisions
      })
    )
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error))))
