/**
 * Ledger write-path benchmark: one hot account, N concurrent clients, each doing hold → settle in a loop through the
 * real Ledger service (group-commit writer), on the embedded store (PGlite on disk) and on a real Postgres.
 *
 *   npm run bench -- ledger [--seconds 10] [--clients 64]      (real Postgres: BENCH_DATABASE_URL or TEST_DATABASE_URL)
 */
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/adapters/store/Database.ts"
import * as PgAccounts from "../src/adapters/store/PgAccounts.ts"
import * as PgReplay from "../src/adapters/store/PgReplay.ts"
import { Accounts } from "../src/app/Accounts.ts"
import { defaultLedgerOptions, Ledger } from "../src/app/Ledger.ts"
import * as PgLedgerWriter from "../src/adapters/store/PgLedgerWriter.ts"
import { Replay } from "../src/app/Replay.ts"
import { freshPostgres } from "../test/support/TestDatabase.ts"
import { benchOptions } from "./Options.ts"

const { number: arg, flag } = benchOptions("ledger")
const seconds = arg("seconds", 10)
const clients = arg("clients", 64)

const run = (label: string, store: ReturnType<typeof Database.layer>, shards: number) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const accounts = yield* Accounts
    const account = yield* ledger.openAccount("hot")
    yield* ledger.deposit(account.id, 1_000_000_000_000n, "bench")
    const loop = (deadline: number) =>
      Effect.gen(function* () {
        let done = 0
        while (Date.now() < deadline) {
          const hold = yield* ledger.placeHold({
            accountId: account.id,
            amount: 2_000n,
            keyId: null,
            keySpendLimit: null,
            model: "bench",
            plugin: "text",
            requestId: null
          })
          yield* ledger.settle(account.id, hold.holdId, 1_500n, { outputTokens: 10 })
          done += 1
        }
        return done
      })
    // warm-up
    yield* Effect.forEach(Array.from({ length: clients }), () => loop(Date.now() + 1_000), { concurrency: "unbounded" })
    const started = Date.now()
    const counts = yield* Effect.forEach(Array.from({ length: clients }), () => loop(started + seconds * 1000), {
      concurrency: "unbounded"
    })
    const elapsed = (Date.now() - started) / 1000
    const requests = counts.reduce((a, b) => a + b, 0)
    const view = yield* accounts.get(account.id)
    const report = yield* (yield* Replay).verify
    console.log(
      `${label.padEnd(22)} shards=${shards} clients=${clients}  ${(requests / elapsed).toFixed(0).padStart(7)} hold+settle/s  ` +
        `${((requests * 2) / elapsed).toFixed(0).padStart(7)} commands/s  ${((requests * 3) / elapsed).toFixed(0).padStart(7)} events/s  ` +
        `held=${view.held} replay=${report.ok ? "ok" : "MISMATCH"}`
    )
  }).pipe(
    Effect.provide(
      Layer.mergeAll(
        PgLedgerWriter.layerWith({ ...defaultLedgerOptions, shards }),
        PgAccounts.layer,
        PgReplay.layer
      ).pipe(Layer.provideMerge(store))
    )
  )

const main = Effect.gen(function* () {
  if (!flag("postgres-only")) {
    const dir = mkdtempSync(join(tmpdir(), "tollgate-bench-"))
    yield* run("pglite (on disk)", Database.layer({ kind: "pglite", dataDir: join(dir, "pglite") }), 1)
    rmSync(dir, { recursive: true, force: true })
  }
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL
  if (url === undefined) {
    console.log("postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)")
    return
  }
  yield* run("postgres", freshPostgres(url), 4)
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
