/**
 * Replay benchmark: writes well-formed ledger histories straight into `events` (multi-row INSERT … SELECT FROM
 * jsonb_to_recordset, 20,000 events a statement), builds the live projections once with replay-apply, then times
 * `verify` and samples memory while it runs. 10,000 accounts each get a key, two deposits and hold → usage → refund
 * cycles; a first round writes 100,000 events and a second takes the same accounts to 1,000,000, so the two verify
 * runs differ only in history length (memory should not).
 *
 *   npm run bench -- replay [--events 1000000] [--accounts 10000] [--pglite-events 100000] [--postgres-only]
 *   (real Postgres: BENCH_DATABASE_URL or TEST_DATABASE_URL; a fresh database is created and dropped)
 *
 * Run with `node --expose-gc` (NODE_OPTIONS=--expose-gc) for a garbage collection before each sample window.
 */
import { Effect, type Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/adapters/store/Database.ts"
import { applyProjections, verifyProjections } from "../src/adapters/store/PgReplay.ts"
import { formatMicros } from "../src/domain/Money.ts"
import { freshPostgres } from "../test/support/TestDatabase.ts"
import { benchOptions } from "./Options.ts"

const { number: arg, flag } = benchOptions("replay")
const totalEvents = arg("events", 1_000_000)
const accountCount = arg("accounts", 10_000)
const pgliteEvents = arg("pglite-events", 100_000)
const CHUNK = 20_000

interface Account {
  readonly id: string
  readonly keyId: string
  position: number
  holds: number
}

interface Row {
  stream_name: string
  stream_position: number
  event_id: string
  event_type: string
  schema_version: number
  data: unknown
  recorded_at: string
}

const at = (n: number) => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString()

/** The next events of one account: opening, a key and two deposits first, then hold → usage → refund cycles. */
const nextEvents = (account: Account, clock: number): Array<Row> => {
  const time = at(clock)
  const event = (type: string, data: Record<string, unknown>, version = 1): Row => {
    account.position += 1
    return {
      stream_name: `account-${account.id}`,
      stream_position: account.position,
      event_id: randomUUID(),
      event_type: type,
      schema_version: version,
      data: { accountId: account.id, at: time, ...data },
      recorded_at: time
    }
  }
  if (account.position === 0) {
    return [
      event("AccountOpened", { name: `bench-${account.id.slice(0, 8)}` }),
      {
        stream_name: `key-${account.keyId}`,
        stream_position: 1,
        event_id: randomUUID(),
        event_type: "KeyCreated",
        schema_version: 1,
        data: {
          keyId: account.keyId,
          accountId: account.id,
          name: "bench",
          prefix: "sk-bench",
          keyHash: account.keyId.replaceAll("-", "").padEnd(64, "0"),
          models: null,
          expiresAt: null,
          spendLimit: null,
          at: time
        },
        recorded_at: time
      },
      event("FundsDeposited", { amount: "1000.000000", reference: "d1" }),
      event("FundsDeposited", { amount: "500.000000", reference: "d2" })
    ]
  }
  account.holds += 1
  const holdId = randomUUID()
  const cost = 1_000n + BigInt(account.holds % 7) * 100n
  return [
    event("HoldPlaced", {
      holdId,
      amount: formatMicros(2_000n),
      keyId: account.keyId,
      model: "sim-text",
      plugin: "text",
      requestId: null,
      expiresAt: at(clock + 300)
    }),
    event(
      "UsageRecalculated",
      {
        holdId,
        cost: formatMicros(cost),
        captured: formatMicros(cost),
        usage: { input_tokens: 10, output_tokens: 20 },
        metrics: { inputTokens: 10, outputTokens: 20, images: 0, videoSeconds: 0 }
      },
      2
    ),
    event("RefundIssued", { holdId, amount: formatMicros(2_000n - cost), reason: "unused" })
  ]
}

/** Appends events round-robin over the accounts until `target` events exist; heads moved at the end. */
const writeEvents = (accounts: ReadonlyArray<Account>, written: number, target: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    let count = written
    let buffer: Array<Row> = []
    let turn = 0
    const flush = Effect.suspend(() => {
      const rows = buffer
      buffer = []
      return sql`
        INSERT INTO events (stream_name, stream_position, event_id, event_type, schema_version, data, metadata,
          recorded_at)
        SELECT stream_name, stream_position, event_id, event_type, schema_version, data, '{}'::jsonb, recorded_at
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS t(stream_name text, stream_position bigint,
          event_id uuid, event_type text, schema_version smallint, data jsonb, recorded_at timestamptz)`
    })
    while (count < target) {
      const account = accounts[turn % accounts.length]
      const rows = nextEvents(account, count)
      buffer.push(...rows)
      count += rows.length
      turn += 1
      if (buffer.length >= CHUNK) yield* flush
    }
    if (buffer.length > 0) yield* flush
    yield* sql`
      INSERT INTO streams (stream_name, version)
      SELECT stream_name, max(stream_position) FROM events GROUP BY stream_name
      ON CONFLICT (stream_name) DO UPDATE SET version = EXCLUDED.version`
    return count
  })

const gc = () => (globalThis as { gc?: () => void }).gc?.()

/** Runs `effect` while sampling RSS and heap every 25 ms; answers the peaks (MB) beside the result. */
const sampled = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    gc()
    const base = process.memoryUsage()
    let rss = base.rss
    let heap = base.heapUsed
    const timer = setInterval(() => {
      const m = process.memoryUsage()
      rss = Math.max(rss, m.rss)
      heap = Math.max(heap, m.heapUsed)
    }, 25)
    const started = Date.now()
    const result = yield* Effect.ensuring(
      effect,
      Effect.sync(() => clearInterval(timer))
    )
    const mb = (n: number) => Math.round(n / 1_048_576)
    return { result, ms: Date.now() - started, rssMb: mb(rss), heapMb: mb(heap), baseRssMb: mb(base.rss) }
  })

const run = (label: string, store: Layer.Layer<SqlClient.SqlClient, unknown>, rounds: ReadonlyArray<number>) =>
  Effect.gen(function* () {
    const accounts: Array<Account> = Array.from({ length: accountCount }, () => ({
      id: randomUUID(),
      keyId: randomUUID(),
      position: 0,
      holds: 0
    }))
    let written = 0
    for (const target of rounds) {
      const insertStarted = Date.now()
      written = yield* writeEvents(accounts, written, target)
      const insertMs = Date.now() - insertStarted
      const apply = yield* sampled(applyProjections())
      const verify = yield* sampled(verifyProjections())
      const report = verify.result
      // Retained memory: a second verify that collects garbage every 100,000 events and samples the heap after it.
      let retained = 0
      yield* verifyProjections({
        onProgress: ({ events }) =>
          Effect.sync(() => {
            if (events % 100_000 >= 10_000) return
            gc()
            retained = Math.max(retained, process.memoryUsage().heapUsed)
          })
      })
      console.log(
        `${label.padEnd(10)} events=${String(written).padStart(8)}  insert ${(insertMs / 1000).toFixed(1)} s  ` +
          `apply ${(apply.ms / 1000).toFixed(1)} s (writer pause ${apply.result?.pauseMs} ms)  ` +
          `verify ${(verify.ms / 1000).toFixed(1)} s = ${report.eventsPerSecond} events/s  ` +
          `peak rss ${verify.rssMb} MB (before ${verify.baseRssMb} MB), peak heap ${verify.heapMb} MB, ` +
          `heap after GC ${Math.round(retained / 1_048_576)} MB  ` +
          `ok=${report.ok} tables=${JSON.stringify(report.tables)}`
      )
    }
  }).pipe(Effect.provide(store))

const main = Effect.gen(function* () {
  const rounds = (total: number) => (total > 100_000 ? [100_000, total] : [total])
  const url = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL
  if (url === undefined) console.log("postgres: skipped (set BENCH_DATABASE_URL or TEST_DATABASE_URL)")
  else yield* run("postgres", freshPostgres(url), rounds(totalEvents))
  if (!flag("postgres-only")) {
    const dir = mkdtempSync(join(tmpdir(), "tollgate-bench-"))
    yield* run("pglite", Database.layer({ kind: "pglite", dataDir: join(dir, "pglite") }), rounds(pgliteEvents))
    rmSync(dir, { recursive: true, force: true })
  }
})

Effect.runPromise(Effect.scoped(main)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
