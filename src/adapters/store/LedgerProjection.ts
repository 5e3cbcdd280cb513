/**
 * Projection rows of the ledger, written from the decider's state. The live writer and replay both go through these
 * functions (replay into a scratch schema), so a difference between them can only come from the events.
 *
 * Rows travel as one JSON document expanded by `jsonb_to_recordset`: one parameter per statement whatever the batch
 * size, and nullable columns need no typed-array inference (the wire codec cannot type an array of nulls).
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { AccountState, HoldState, KeySpend } from "../../domain/ledger/LedgerAccount.ts"

const json = (rows: ReadonlyArray<Record<string, unknown>>): string =>
  JSON.stringify(rows, (_key, value) => (typeof value === "bigint" ? value.toString() : value))

export interface AccountRow {
  readonly state: AccountState
  readonly version: bigint
}

/** `schema` is a trusted identifier chosen by the code ("public" or a replay scratch schema), never user input. */
export const upsertAccounts = (sql: SqlClient.SqlClient, schema: string, rows: ReadonlyArray<AccountRow>) =>
  rows.length === 0
    ? Effect.void
    : sql`
      INSERT INTO ${sql(schema)}.accounts (id, name, created_at, deposited, captured, held, version)
      SELECT id, name, created_at, deposited, captured, held, version
      FROM jsonb_to_recordset(${json(
        rows.map((r) => ({
          id: r.state.accountId,
          name: r.state.name,
          created_at: r.state.createdAt,
          deposited: r.state.deposited,
          captured: r.state.captured,
          held: r.state.held,
          version: r.version
        }))
      )}::jsonb) AS t(id uuid, name text, created_at timestamptz, deposited bigint, captured bigint, held bigint,
        version bigint)
      ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, deposited = EXCLUDED.deposited,
        captured = EXCLUDED.captured, held = EXCLUDED.held, version = EXCLUDED.version`.pipe(Effect.asVoid)

export const upsertHolds = (sql: SqlClient.SqlClient, schema: string, holds: ReadonlyArray<HoldState>) =>
  holds.length === 0
    ? Effect.void
    : sql`
      INSERT INTO ${sql(schema)}.holds (hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin,
        request_id, expires_at, placed_at, resolved_at)
      SELECT hold_id, account_id, key_id, amount, status, captured, refunded, model, plugin, request_id, expires_at,
        placed_at, resolved_at
      FROM jsonb_to_recordset(${json(
        holds.map((h) => ({
          hold_id: h.holdId,
          account_id: h.accountId,
          key_id: h.keyId,
          amount: h.amount,
          status: h.status,
          captured: h.captured,
          refunded: h.refunded,
          model: h.model,
          plugin: h.plugin,
          request_id: h.requestId,
          expires_at: h.expiresAt,
          placed_at: h.placedAt,
          resolved_at: h.resolvedAt
        }))
      )}::jsonb) AS t(hold_id uuid, account_id uuid, key_id uuid, amount bigint, status text, captured bigint,
        refunded bigint, model text, plugin text, request_id text, expires_at timestamptz, placed_at timestamptz,
        resolved_at timestamptz)
      ON CONFLICT (hold_id) DO UPDATE SET status = EXCLUDED.status, captured = EXCLUDED.captured,
        refunded = EXCLUDED.refunded, resolved_at = EXCLUDED.resolved_at`.pipe(Effect.asVoid)

export const updateKeySpend = (
  sql: SqlClient.SqlClient,
  schema: string,
  spends: ReadonlyArray<readonly [string, KeySpend]>
) =>
  spends.length === 0
    ? Effect.void
    : sql`
      UPDATE ${sql(schema)}.api_keys AS k SET spent = v.spent, held = v.held
      FROM jsonb_to_recordset(${json(spends.map(([id, s]) => ({ id, spent: s.spent, held: s.held })))}::jsonb)
        AS v(id uuid, spent bigint, held bigint)
      WHERE k.id = v.id`.pipe(Effect.asVoid)

export interface DepositRow {
  readonly accountId: string
  readonly reference: string
  readonly amount: bigint
  readonly at: string
}

export const insertDeposits = (sql: SqlClient.SqlClient, schema: string, deposits: ReadonlyArray<DepositRow>) =>
  deposits.length === 0
    ? Effect.void
    : sql`
      INSERT INTO ${sql(schema)}.deposits (account_id, reference, amount, at)
      SELECT account_id, reference, amount, at
      FROM jsonb_to_recordset(${json(
        deposits.map((d) => ({ account_id: d.accountId, reference: d.reference, amount: d.amount, at: d.at }))
      )}::jsonb) AS t(account_id uuid, reference text, amount bigint, at timestamptz)`.pipe(Effect.asVoid)
