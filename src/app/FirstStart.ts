/**
 * The embedded store's first start: an admin token generated and kept in `<data dir>/admin-token` (mode 0600), and a
 * `demo` account with 10.00 and one key, so a newcomer can call the API at once. Both are shown once, in a banner
 * written straight to the terminal by Launch.ts, never through the logger; without a terminal, to `first-start.txt`
 * beside the admin token (mode 0600).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { base62 } from "../domain/keys/ApiKey.ts"
import { Keys } from "./Keys.ts"
import { Ledger } from "./Ledger.ts"

export const adminTokenPath = (dataDir: string) => join(dataDir, "admin-token")

/** Reads the stored admin token, or creates one; `created` tells the banner to show it. */
export const loadOrCreateAdminToken = (dataDir: string) =>
  Effect.sync(() => {
    const path = adminTokenPath(dataDir)
    if (existsSync(path)) return { token: readFileSync(path, "utf8").trim(), created: false }
    mkdirSync(dataDir, { recursive: true })
    const token = `tga_${base62(randomBytes(32))}`
    writeFileSync(path, `${token}\n`, { mode: 0o600 })
    chmodSync(path, 0o600)
    return { token, created: true }
  })

export const firstStartPath = (dataDir: string) => join(dataDir, "first-start.txt")

/** Writes the first start's secrets (the banner's lines) where only the data directory's owner can read them. */
export const saveFirstStartSecrets = (dataDir: string, lines: ReadonlyArray<string>) =>
  Effect.sync(() => {
    const path = firstStartPath(dataDir)
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(path, `${lines.join("\n")}\n`, { mode: 0o600 })
    chmodSync(path, 0o600)
    return path
  })

export const DEMO_BALANCE = 10_000_000n

/** Creates the demo account and key once per installation; returns them only on the run that created them. */
export const ensureDemoAccount = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const claimed = yield* sql<{ key: string }>`
    INSERT INTO installation (key, value) VALUES ('demo', '{}'::jsonb) ON CONFLICT (key) DO NOTHING RETURNING key`
  if (claimed.length === 0) return undefined
  const ledger = yield* Ledger
  const account = yield* ledger.openAccount("demo")
  yield* ledger.deposit(account.id, DEMO_BALANCE, "demo-initial-balance")
  const key = yield* (yield* Keys).create(account.id, { name: "demo", models: null, expiresAt: null, spendLimit: null })
  yield* sql`UPDATE installation SET value = ${JSON.stringify({ accountId: account.id, keyId: key.id })}::jsonb
    WHERE key = 'demo'`
  return { accountId: account.id, key: key.key }
})
