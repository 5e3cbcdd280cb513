/**
 * Projection rows of the ledger, built from the decider's state. The live writer and replay both build their rows
 * with these functions and write them with these statements (replay into a scratch schema), so a difference between
 * them can only come from the events.
 *
 * Rows travel as one JSON document expanded by `jsonb_to_recordset`: one parameter per statement whatever the batch
 * size, and nullable columns need no typed-array inference (the wire codec cannot type an array of nulls).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { AccountState, HoldState, KeySpend } from "../../domain/ledger/LedgerState.ts"
import { recordsJson } from "./EventAppends.ts"

export interface AccountRow {
  readonly state: AccountState
  readonly version: bigint
}

export interface DepositRow {
  readonly accountId: string
  readonly reference: string
  readonly amount: bigint
  readonly at: string
}

export const accountRecords = (rows: ReadonlyArray<AccountRow>) =>
  recordsJson(
    rows.map((r) => ({
      id: r.state.accountId,
      name: r.state.name,
      created_at: r.state.createdAt,
      deposited: String(r.state.deposited),
      captured: String(r.state.captured),
      held: String(r.state.held),
      version: String(r.version)
    }))
  )

export const holdRecords = (holds: ReadonlyArray<HoldState>) =>
  recordsJson(
    holds.map((h) => ({
      hold_id: h.holdId,
      account_id: h.accountId,
      key_id: h.keyId,
      amount: String(h.amount),
      status: h.status,
      captured: String(h.captured),
      refunded: String(h.refunded),
      model: h.model,
      plugin: h.plugin,
      request_id: h.requestId,
      expires_at: h.expiresAt,
      placed_at: h.placedAt,
      resolved_at: h.resolvedAt
    }))
  )

export const keySpendRecords = (spends: ReadonlyArray<readonly [string, KeySpend]>) =>
  recordsJson(spends.map(([id, s]) => ({ id, spent: String(s.spent), held: String(s.held) })))

export const depositRecords = (deposits: ReadonlyArray<DepositRow>) =>
  recordsJson(
    deposits.map((d) => ({ account_id: d.accountId, reference: d.reference, amount: String(d.amount), at: d.at }))
  )

/** The statements, parameterised by schema ("public" or a replay scratch schema: a trusted identifier) and rows. */
export const upsertAccountsSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.accounts (id, name, created_at, deposited, captured, held, version)
  SELECT id, name, created_at, deposited, captured, held, version
  FROM jsonb_to_recordset(${records}::jsonb) AS t(id uuid, name text, created_at timestamptz, deposited bigint,
    captured bigint, held bigint, version bigint)
  ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, deposited = EXCLUDED.deposited,
    captured = EXCLUDED.captured, held = EXCLUDED.held, version = EXCLUDED.version`

/** Hold rows from their JSON records, as an INSERT both hold statements extend. */
const holdsInsert = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.holds (hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin,
    request_id, expires_at, placed_at, resolved_at)
  SELECT hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin, request_id, expires_at,
    placed_at, resolved_at
  FROM jsonb_to_recordset(${records}::jsonb) AS t(hold_id uuid, account_id uuid, key_id uuid, amount bigint,
    status text, captured bigint, refunded bigint, model text, plugin text, request_id text, expires_at timestamptz,
    placed_at timestamptz, resolved_at timestamptz)`

/** Holds placed in this batch: a plain insert, so an id placed before is refused (holds_pkey), never overwritten. */
export const insertHoldsSql = (sql: SqlClient.SqlClient, schema: string, records: string) =>
  holdsInsert(sql, schema, records)

/** Holds placed earlier and resolved now (and every hold, when replay rebuilds the table). */
export const upsertHoldsSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  ${holdsInsert(sql, schema, records)}
  ON CONFLICT (hold_id) DO UPDATE SET status = EXCLUDED.status, captured = EXCLUDED.captured,
    refunded = EXCLUDED.refunded, resolved_at = EXCLUDED.resolved_at`

export const updateKeySpendSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  UPDATE ${sql(schema)}.api_keys AS k SET spent = v.spent, held = v.held
  FROM jsonb_to_recordset(${records}::jsonb) AS v(id uuid, spent bigint, held bigint)
  WHERE k.id = v.id`

export const insertDepositsSql = (sql: SqlClient.SqlClient, schema: string, records: string) => sql`
  INSERT INTO ${sql(schema)}.deposits (account_id, reference, amount, at)
  SELECT account_id, reference, amount, at
  FROM jsonb_to_recordset(${records}::jsonb) AS t(account_id uuid, reference text, amount bigint, at timestamptz)`

const unlessEmpty = <A, E, R>(rows: ReadonlyArray<unknown>, statement: () => Effect.Effect<A, E, R>) =>
  rows.length === 0 ? Effect.void : Effect.asVoid(statement())

export const upsertAccounts = (sql: SqlClient.SqlClient, schema: string, rows: ReadonlyArray<AccountRow>) =>
  unlessEmpty(rows, () => upsertAccountsSql(sql, schema, accountRecords(rows)))

export const upsertHolds = (sql: SqlClient.SqlClient, schema: string, holds: ReadonlyArray<HoldState>) =>
  unlessEmpty(holds, () => upsertHoldsSql(sql, schema, holdRecords(holds)))

export const updateKeySpend = (
  sql: SqlClient.SqlClient,
  schema: string,
  spends: ReadonlyArray<readonly [string, KeySpend]>
) => unlessEmpty(spends, () => updateKeySpendSql(sql, schema, keySpendRecords(spends)))

export const insertDeposits = (sql: SqlClient.SqlClient, schema: string, deposits: ReadonlyArray<DepositRow>) =>
  unlessEmpty(deposits, () => insertDepositsSql(sql, schema, depositRecords(deposits)))
