/**
 * Replay: folds every event, in global order, through the same deciders' `evolve` the live writer uses, writes the
 * resulting rows through the same projection functions into a scratch schema, and diffs the tables row by row.
 * `api_keys.last_used_at` is operational metadata, not an event, and is left out of the comparison.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { Replay, type ReplayMismatch } from "../../app/Replay.ts"
import type { KeyEvent } from "../../domain/keys/ApiKey.ts"
import { type AccountState, evolve, initialState } from "../../domain/ledger/LedgerAccount.ts"
import { isLedgerEventType, type LedgerEvent } from "../../domain/ledger/LedgerEvent.ts"
import { parseDecimal } from "../../domain/Money.ts"
import { type DepositRow, insertDeposits, updateKeySpend, upsertAccounts, upsertHolds } from "./LedgerProjection.ts"
import { EVENT_COLUMNS, type EventRow, orUnavailable } from "./PgEventStore.ts"

const PAGE = 5_000

interface KeyRow {
  id: string
  account_id: string
  name: string
  prefix: string
  key_hash: Buffer
  created_at: Date
  expires_at: Date | null
  models: ReadonlyArray<string> | null
  spend_limit: bigint | null
  revoked_at: Date | null
}

/** Tables compared, with their key column and the columns that must match. */
const TABLES: ReadonlyArray<{ readonly name: string; readonly key: string; readonly columns: string }> = [
  { name: "accounts", key: "id", columns: "id, name, created_at, deposited, captured, held, version" },
  { name: "deposits", key: "reference", columns: "account_id, reference, amount, at" },
  {
    name: "holds",
    key: "hold_id",
    columns:
      "hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin, request_id, expires_at, placed_at, resolved_at"
  },
  {
    name: "api_keys",
    key: "id",
    columns:
      "id, account_id, name, prefix, key_hash, created_at, expires_at, models, spend_limit, spent, held, revoked_at"
  }
]

export const layer = Layer.effect(
  Replay,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const fold = Effect.gen(function* () {
      const accounts = new Map<string, AccountState>()
      const versions = new Map<string, bigint>()
      const keys = new Map<string, KeyRow>()
      const deposits: Array<DepositRow> = []
      let after = 0n
      let count = 0
      for (;;) {
        const rows = yield* sql<EventRow>`
          SELECT ${sql.literal(EVENT_COLUMNS)} FROM events WHERE global_position > ${after}
          ORDER BY global_position LIMIT ${PAGE}`
        for (const row of rows) {
          count += 1
          if (row.stream_name.startsWith("account-") && isLedgerEventType(row.event_type)) {
            const accountId = row.stream_name.slice("account-".length)
            const event = { type: row.event_type, data: row.data } as LedgerEvent
            const state = evolve(accounts.get(accountId) ?? initialState(accountId), event)
            accounts.set(accountId, state)
            versions.set(accountId, row.stream_position)
            if (event.type === "FundsDeposited") {
              deposits.push({
                accountId,
                reference: event.data.reference,
                amount: parseDecimal(event.data.amount) as bigint,
                at: event.data.at
              })
            }
          } else if (row.stream_name.startsWith("key-")) {
            const event = { type: row.event_type, data: row.data } as KeyEvent
            if (event.type === "KeyCreated") {
              const d = event.data
              keys.set(d.keyId, {
                id: d.keyId,
                account_id: d.accountId,
                name: d.name,
                prefix: d.prefix,
                key_hash: Buffer.from(d.keyHash, "hex"),
                created_at: new Date(d.at),
                expires_at: d.expiresAt === null ? null : new Date(d.expiresAt),
                models: d.models,
                spend_limit: d.spendLimit === null ? null : (parseDecimal(d.spendLimit) as bigint),
                revoked_at: null
              })
            } else if (event.type === "KeyRevoked") {
              const key = keys.get(event.data.keyId)
              if (key !== undefined) keys.set(key.id, { ...key, revoked_at: new Date(event.data.at) })
            }
          }
        }
        if (rows.length < PAGE) break
        after = rows[rows.length - 1].global_position
      }
      return { accounts, versions, keys, deposits, count }
    })

    const verify = Effect.gen(function* () {
      const schema = `replay_${randomUUID().replaceAll("-", "")}`
      const result = yield* Effect.acquireUseRelease(
        Effect.gen(function* () {
          yield* sql`CREATE SCHEMA ${sql(schema)}`
          for (const table of TABLES) {
            yield* sql`CREATE TABLE ${sql(schema)}.${sql(table.name)} (LIKE public.${sql(table.name)} INCLUDING ALL)`
          }
        }),
        () =>
          Effect.gen(function* () {
            const folded = yield* fold
            yield* upsertAccounts(
              sql,
              schema,
              [...folded.accounts.values()].map((state) => ({
                state,
                version: folded.versions.get(state.accountId) as bigint
              }))
            )
            yield* insertDeposits(sql, schema, folded.deposits)
            yield* upsertHolds(
              sql,
              schema,
              [...folded.accounts.values()].flatMap((s) => [...s.holds.values()])
            )
            const keyRows = [...folded.keys.values()]
            if (keyRows.length > 0) {
              yield* sql`INSERT INTO ${sql(schema)}.api_keys ${sql.insert(
                keyRows as unknown as readonly [Record<string, unknown>]
              )}`
            }
            yield* updateKeySpend(
              sql,
              schema,
              [...folded.accounts.values()].flatMap((s) => [...s.keys])
            )
            const mismatches: Array<ReplayMismatch> = []
            for (const table of TABLES) {
              const rows = yield* sql<{ side: string; k: string; row: unknown }>`
                (SELECT 'live' AS side, ${sql(table.key)}::text AS k, to_jsonb(l) AS row
                   FROM (SELECT ${sql.literal(table.columns)} FROM public.${sql(table.name)}
                         EXCEPT SELECT ${sql.literal(table.columns)} FROM ${sql(schema)}.${sql(table.name)}) l)
                UNION ALL
                (SELECT 'replayed' AS side, ${sql(table.key)}::text AS k, to_jsonb(r) AS row
                   FROM (SELECT ${sql.literal(table.columns)} FROM ${sql(schema)}.${sql(table.name)}
                         EXCEPT SELECT ${sql.literal(table.columns)} FROM public.${sql(table.name)}) r)
                ORDER BY k LIMIT 200`
              const byKey = new Map<string, ReplayMismatch>()
              for (const row of rows) {
                const current = byKey.get(row.k) ?? { table: table.name, key: row.k, live: null, replayed: null }
                byKey.set(
                  row.k,
                  row.side === "live" ? { ...current, live: row.row } : { ...current, replayed: row.row }
                )
              }
              mismatches.push(...byKey.values())
            }
            return { ok: mismatches.length === 0, events: folded.count, accounts: folded.accounts.size, mismatches }
          }),
        () => sql`DROP SCHEMA ${sql(schema)} CASCADE`.pipe(Effect.ignore)
      )
      return result
    }).pipe(orUnavailable, Effect.withSpan("Replay.verify"))

    return Replay.of({ verify })
  })
)
