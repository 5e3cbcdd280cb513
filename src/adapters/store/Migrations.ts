/**
 * Numbered SQL migrations from `migrations/` (NNNN_name.sql), applied in order at start, each recorded in
 * `schema_migrations` in the same transaction as its statements, never re-applied. An advisory lock keeps two
 * instances starting together from applying the same file twice. The same files run on PGlite and on Postgres.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

export interface Migration {
  readonly id: number
  readonly name: string
  readonly statements: ReadonlyArray<string>
}

const MIGRATION_FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/

export const defaultMigrationsDir = fileURLToPath(new URL("../../../migrations/", import.meta.url))

/**
 * Splits a file into statements on semicolons outside comments, quotes and dollar-quoted bodies: the wire client
 * speaks the extended protocol, which takes one statement per message.
 */
export const splitStatements = (text: string): Array<string> => {
  const statements: Array<string> = []
  let current = ""
  let index = 0
  while (index < text.length) {
    const rest = text.slice(index)
    if (rest.startsWith("--")) {
      const end = text.indexOf("\n", index)
      index = end === -1 ? text.length : end + 1
      continue
    }
    const char = text[index]
    if (char === "'") {
      const end = text.indexOf("'", index + 1)
      const stop = end === -1 ? text.length : end + 1
      current += text.slice(index, stop)
      index = stop
      continue
    }
    const dollar = /^\$[a-zA-Z_]*\$/.exec(rest)
    if (dollar !== null) {
      const end = text.indexOf(dollar[0], index + dollar[0].length)
      const stop = end === -1 ? text.length : end + dollar[0].length
      current += text.slice(index, stop)
      index = stop
      continue
    }
    if (char === ";") {
      if (current.trim().length > 0) statements.push(current.trim())
      current = ""
      index += 1
      continue
    }
    current += char
    index += 1
  }
  if (current.trim().length > 0) statements.push(current.trim())
  return statements
}

export const loadMigrations = (directory: string = defaultMigrationsDir): Effect.Effect<ReadonlyArray<Migration>> =>
  Effect.sync(() =>
    readdirSync(directory)
      .flatMap((file) => {
        const match = MIGRATION_FILE.exec(file)
        if (match === null) return []
        return [
          {
            id: Number(match[1]),
            name: match[2],
            statements: splitStatements(readFileSync(`${directory}/${file}`, "utf8"))
          }
        ]
      })
      .sort((a, b) => a.id - b.id)
  )

// A fixed key for pg_advisory_xact_lock: "tollgate" in ASCII, truncated to a bigint.
const MIGRATION_LOCK = 7_310_597_110_648_353n

export const migrate = (directory?: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const migrations = yield* loadMigrations(directory)
    yield* sql`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`
    const applied: Array<number> = []
    for (const migration of migrations) {
      const done = yield* sql.withTransaction(
        Effect.gen(function* () {
          yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`
          const rows = yield* sql<{ id: number }>`SELECT id FROM schema_migrations WHERE id = ${migration.id}`
          if (rows.length > 0) return false
          for (const statement of migration.statements) yield* sql.unsafe(statement).unprepared
          yield* sql`INSERT INTO schema_migrations (id, name) VALUES (${migration.id}, ${migration.name})`
          return true
        })
      )
      if (done) applied.push(migration.id)
    }
    return applied
  })
