/** Accounts read side on Postgres/PGlite. */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { type AccountView, Accounts } from "../../app/Accounts.ts"
import { LedgerRejected } from "../../app/LedgerErrors.ts"
import { accountStream, isUuid } from "../../domain/Ids.ts"
import { EVENT_COLUMNS, type EventRow, orUnavailable, toStoredEvent } from "./PgEventStore.ts"
import { traced } from "../../app/Traced.ts"

interface AccountRow {
  id: string
  name: string
  created_at: Date
  deposited: bigint
  captured: bigint
  held: bigint
  version: bigint
}

const toView = (row: AccountRow): AccountView => ({
  id: row.id,
  name: row.name,
  createdAt: row.created_at.toISOString(),
  deposited: row.deposited,
  captured: row.captured,
  held: row.held,
  version: row.version
})

const notFound = (accountId: string) =>
  new LedgerRejected({ reason: "AccountNotFound", message: `account ${accountId} does not exist` })

export const layer = Layer.effect(
  Accounts,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const get = Effect.fnUntraced(function* (accountId: string) {
      if (!isUuid(accountId)) return yield* notFound(accountId)
      const rows = yield* sql<AccountRow>`
        SELECT id, name, created_at, deposited, captured, held, version FROM accounts WHERE id = ${accountId}`.pipe(
        orUnavailable
      )
      if (rows.length === 0) return yield* notFound(accountId)
      return toView(rows[0])
    }, traced("Accounts.get"))

    const list = Effect.fnUntraced(function* (options: { readonly search?: string; readonly limit: number }) {
      const pattern = options.search === undefined ? null : `%${options.search.toLowerCase()}%`
      const rows = yield* sql<AccountRow>`
        SELECT id, name, created_at, deposited, captured, held, version FROM accounts
        WHERE ${pattern}::text IS NULL OR lower(name) LIKE ${pattern} OR id::text = ${options.search ?? ""}
        ORDER BY created_at, id LIMIT ${options.limit}`.pipe(orUnavailable)
      return rows.map(toView)
    }, traced("Accounts.list"))

    const ledger = Effect.fnUntraced(function* (accountId: string, after: bigint, limit: number) {
      yield* get(accountId)
      const rows = yield* sql<EventRow>`
        SELECT ${sql.literal(EVENT_COLUMNS)} FROM events
        WHERE stream_name = ${accountStream(accountId)} AND stream_position > ${after}
        ORDER BY stream_position LIMIT ${limit}`.pipe(orUnavailable)
      return rows.map(toStoredEvent)
    }, traced("Accounts.ledger"))

    return Accounts.of({ get, list, ledger })
  })
)
