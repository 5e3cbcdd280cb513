/**
 * Commits a batch of ledger commands in ONE transaction (group commit): lock the heads of every account stream the
 * batch touches, load only the state those commands need, run the pure decider command by command (each rule checked
 * per event, in order, on the state left by the previous command), append all accepted events and write the
 * projections. One hot account then costs one transaction per batch instead of one per request (stack-notes §0b).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { StoreUnavailable, StreamVersionConflict } from "../../app/StoreErrors.ts"
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
import { type DepositRow, insertDeposits, updateKeySpend, upsertAccounts, upsertHolds } from "./LedgerProjection.ts"
import { appendMany, type StreamAppend, storeUnavailable } from "./PgEventStore.ts"

export interface BatchItem {
  readonly command: LedgerCommand
  readonly metadata: Record<string, unknown>
}

interface AccountLoaded {
  id: string
  name: string
  created_at: Date
  deposited: bigint
  captured: bigint
  held: bigint
  version: bigint
}

interface HoldLoaded {
  hold_id: string
  account_id: string
  key_id: string | null
  amount: bigint
  status: HoldState["status"]
  captured: bigint
  refunded: bigint
  model: string | null
  plugin: string | null
  request_id: string | null
  expires_at: Date | null
  placed_at: Date
  resolved_at: Date | null
}

const iso = (value: Date | null): string | null => (value === null ? null : value.toISOString())

const holdFromRow = (row: HoldLoaded): HoldState => ({
  holdId: row.hold_id,
  accountId: row.account_id,
  keyId: row.key_id,
  amount: row.amount,
  status: row.status,
  captured: row.captured,
  refunded: row.refunded,
  model: row.model,
  plugin: row.plugin,
  requestId: row.request_id,
  expiresAt: iso(row.expires_at),
  placedAt: row.placed_at.toISOString(),
  resolvedAt: iso(row.resolved_at)
})

const holdIdOf = (command: LedgerCommand): string | undefined =>
  command.type === "PlaceHold" || command.type === "SettleHold" || command.type === "ReleaseHold"
    ? command.holdId
    : undefined

const loadStates = (sql: SqlClient.SqlClient, items: ReadonlyArray<BatchItem>) =>
  Effect.gen(function* () {
    const accountIds = [...new Set(items.map((i) => i.command.accountId))]
    const holdIds = [...new Set(items.flatMap((i) => holdIdOf(i.command) ?? []))]
    const deposits = items.flatMap((i) => (i.command.type === "Deposit" ? [i.command] : []))

    const accounts = yield* sql<AccountLoaded>`
      SELECT id, name, created_at, deposited, captured, held, version FROM accounts
      WHERE id = ANY(${accountIds}::uuid[])`
    const holds =
      holdIds.length === 0
        ? []
        : yield* sql<HoldLoaded>`
          SELECT hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin, request_id,
            expires_at, placed_at, resolved_at
          FROM holds WHERE hold_id = ANY(${holdIds}::uuid[])`
    const keyIds = [
      ...new Set([
        ...items.flatMap((i) => (i.command.type === "PlaceHold" && i.command.keyId !== null ? [i.command.keyId] : [])),
        ...holds.flatMap((h) => (h.key_id === null ? [] : [h.key_id]))
      ])
    ]
    const keys =
      keyIds.length === 0
        ? []
        : yield* sql<{ id: string; account_id: string; spent: bigint; held: bigint }>`
          SELECT id, account_id, spent, held FROM api_keys WHERE id = ANY(${keyIds}::uuid[])`
    const references =
      deposits.length === 0
        ? []
        : yield* sql<{ account_id: string; reference: string; amount: bigint }>`
          SELECT d.account_id, d.reference, d.amount FROM deposits d
          JOIN unnest(${deposits.map((d) => d.accountId)}::uuid[], ${deposits.map((d) => d.reference)}::text[])
            AS q(account_id, reference) ON d.account_id = q.account_id AND d.reference = q.reference`

    const states = new Map<string, AccountState>()
    const versions = new Map<string, bigint>()
    for (const id of accountIds) states.set(id, initialState(id))
    for (const row of accounts) {
      versions.set(row.id, row.version)
      states.set(row.id, {
        ...initialState(row.id),
        exists: true,
        name: row.name,
        createdAt: row.created_at.toISOString(),
        deposited: row.deposited,
        captured: row.captured,
        held: row.held
      })
    }
    const patch = (accountId: string, change: (state: AccountState) => AccountState) => {
      const state = states.get(accountId)
      if (state !== undefined) states.set(accountId, change(state))
    }
    for (const row of holds) {
      patch(row.account_id, (s) => ({ ...s, holds: new Map(s.holds).set(row.hold_id, holdFromRow(row)) }))
    }
    for (const row of keys) {
      patch(row.account_id, (s) => ({ ...s, keys: new Map(s.keys).set(row.id, { spent: row.spent, held: row.held }) }))
    }
    for (const row of references) {
      patch(row.account_id, (s) => ({
        ...s,
        depositReferences: new Map(s.depositReferences).set(row.reference, row.amount)
      }))
    }
    return { states, versions }
  })

/**
 * Decides and commits the batch. A rejected command leaves no trace and does not affect the others; if the
 * transaction itself fails, nothing of the batch is written and every command fails with the same error.
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
        yield* sql`SELECT stream_name FROM streams WHERE stream_name = ANY(${accountIds.map(accountStream)}::text[])
          ORDER BY stream_name FOR UPDATE`
        const { states, versions } = yield* loadStates(sql, items)
        const decisions: Array<Decision> = []
        const appends = new Map<
          string,
          { expected: bigint | "no_stream"; events: Array<StreamAppend["events"][number]> }
        >()
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
          const pending = appends.get(stream) ?? { expected: versions.get(accountId) ?? "no_stream", events: [] }
          appends.set(stream, pending)
          for (const event of decision.events) {
            state = evolve(state, event)
            pending.events.push({ eventId: newEventId(), type: event.type, data: event.data, metadata: item.metadata })
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
        const streamVersions = yield* appendMany(
          sql,
          [...appends].map(([stream, a]) => ({ stream, expected: a.expected, events: a.events })),
          now
        )
        const accountRows = [...appends.keys()].map((stream) => {
          const accountId = stream.slice("account-".length)
          return { state: states.get(accountId) as AccountState, version: streamVersions.get(stream) as bigint }
        })
        yield* upsertAccounts(sql, "public", accountRows)
        yield* upsertHolds(sql, "public", [...touchedHolds.values()])
        yield* updateKeySpend(sql, "public", [...touchedKeys])
        yield* insertDeposits(sql, "public", newDeposits)
        return decisions
      })
    )
  }).pipe(Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error))))
