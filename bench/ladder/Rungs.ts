/**
 * Starting one rung of the ladder (bench/ladder/main.ts) as its own process, with what the ladder reads about it:
 * its pid, its API keys (funded accounts, one per connection), the CPU of the Postgres backends serving its own
 * database, and that database's transaction and lookup counters.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { join } from "node:path"
import {
  compiled,
  cpuMicros,
  freePort,
  here,
  postgresBackends,
  spawnNode,
  startedGateway,
  waitFor
} from "../suite/Processes.ts"
import { fundedKey } from "../suite/AdminCalls.ts"

export type Rung = "floor" | "effect" | "memory" | "postgres" | "pglite"

export interface RungServer {
  readonly rung: Rung
  readonly pid: number
  readonly origin: string
  /** The model the rung's requests name: the mock's own for the bare proxies, the gateway's for Tollgate. */
  readonly model: string
  /** The model whose upstream waits before its first byte (the mock's `mock-think`, `MockUpstream.ts`). */
  readonly thinkingModel: string
  /** `Bearer …` values, one per connection; empty for the proxies. */
  readonly keys: ReadonlyArray<string>
  readonly readyMs: number
  readonly hasPostgres: boolean
  /** CPU (µs) of the Postgres backends serving this rung's database now; 0 without one. */
  readonly postgresCpu: () => number
  /** Transactions and key / alert-endpoint table scans in this rung's database; undefined without one. */
  readonly dbCounters: () => Promise<Record<string, number> | undefined>
  readonly stop: () => Promise<void>
}

export const uptime = () => {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim()
  } catch {
    return `load average: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`
  }
}

export const postgresBase =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
export const psql = (sql: string, database?: string) => {
  const url = new URL(postgresBase)
  if (database !== undefined) url.pathname = `/${database}`
  return execFileSync("psql", [url.toString(), "-v", "ON_ERROR_STOP=1", "-Atqc", sql], { encoding: "utf8" })
}

// Key lookups by digest use the unique index on key_hash (the ledger's projection updates api_keys by id, through the
// primary key); alert endpoints are read only by account.
const COUNTERS_SQL = `SELECT
  (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()),
  (SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE indexrelname = 'api_keys_key_hash_key'),
  (SELECT coalesce(sum(coalesce(idx_scan, 0) + coalesce(seq_scan, 0)), 0) FROM pg_stat_user_tables
    WHERE relname = 'alert_endpoints'),
  (SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint)`

// What a request writes, table by table: rows inserted, updated (HOT or not) and deleted.
const WRITES_SQL = `SELECT relname, n_tup_ins + n_tup_upd + n_tup_del FROM pg_stat_user_tables`

const databases = new Set<string>()
process.on("exit", () => {
  for (const database of databases) {
    try {
      psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    } catch {}
  }
})

export const startRung = async (
  rung: Rung,
  options: { readonly runDir: string; readonly mockOrigin: string; readonly core: number; readonly keys: number }
): Promise<RungServer | undefined> => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const logFile = join(options.runDir, `${rung}.log`)
  const started = Date.now()
  if (rung === "floor" || rung === "effect") {
    const script = rung === "floor" ? here("./FloorProxy.ts") : here("../ladder/EffectServer.ts")
    const proxy = spawnNode(script, {
      env: { PORT: String(port), UPSTREAM: options.mockOrigin },
      logFile,
      core: options.core
    })
    await waitFor((signal) => fetch(`${origin}/`, { signal }).then(() => true), 60, rung)
    return {
      rung,
      pid: proxy.pid,
      origin,
      model: "mock-fast",
      thinkingModel: "mock-think",
      keys: [],
      readyMs: Date.now() - started,
      hasPostgres: false,
      postgresCpu: () => 0,
      dbCounters: () => Promise.resolve(undefined),
      stop: proxy.stop
    }
  }
  const adminToken = randomBytes(24).toString("hex")
  const configFile = join(options.runDir, "tollgate.yaml")
  writeFileSync(
    configFile,
    `upstreams:
  mock-openai: { protocol: openai, baseUrl: "${options.mockOrigin}/v1", apiKey: "mock", maxConnections: 2048 }
models:
  - { id: bench-chat, plugin: text, upstreams: [mock-openai], upstreamModel: mock-fast, pricing: { input: "0.10", output: "0.40" }, maxOutputTokens: 256 }
  - { id: bench-think, plugin: text, upstreams: [mock-openai], upstreamModel: mock-think, pricing: { input: "0.10", output: "0.40" }, maxOutputTokens: 256 }
`
  )
  const env: Record<string, string> = {
    PORT: String(port),
    TOLLGATE_ADMIN_TOKEN: adminToken,
    TOLLGATE_CONFIG: configFile,
    TOLLGATE_DATA_DIR: join(options.runDir, `${rung}-data`)
  }
  let database: string | undefined
  if (rung !== "pglite") {
    database = `tollgate_ladder_${rung}_${Date.now()}`
    try {
      psql(`CREATE DATABASE ${database}`)
      databases.add(database)
    } catch (error) {
      console.log(`${rung}: skipped, cannot create a database on ${postgresBase}: ${String(error).split("\n")[0]}`)
      return undefined
    }
    const url = new URL(postgresBase)
    url.pathname = `/${database}`
    env.DATABASE_URL = url.toString()
  }
  // The Postgres and PGlite rungs run what `npm start` runs (or BENCH_GATEWAY_SCRIPT, for before/after comparisons);
  // the in-memory rung is its own entry point, compiled the same way (dist/ladder-memory; BENCH_MEMORY_SCRIPT names
  // another build of it, for before/after).
  const script =
    rung !== "memory"
      ? startedGateway()
      : (process.env.BENCH_MEMORY_SCRIPT ?? compiled("dist/ladder-memory", "bench/ladder/MemoryLedgerGateway.ts"))
  const gateway = spawnNode(script, { env, logFile, core: options.core })
  await waitFor(
    (signal) => fetch(`${origin}/readyz`, { signal }).then((r) => r.status === 200),
    180,
    `${rung}; see ${logFile}`
  )
  const readyMs = Date.now() - started
  const keys: Array<string> = []
  for (let i = 0; i < options.keys; i++) {
    keys.push(`Bearer ${await fundedKey(origin, adminToken, `ladder-${i}`, "100000")}`)
  }
  const db = database
  return {
    rung,
    pid: gateway.pid,
    origin,
    model: "bench-chat",
    thinkingModel: "bench-think",
    keys,
    readyMs,
    hasPostgres: db !== undefined,
    postgresCpu: () => (db === undefined ? 0 : postgresBackends(db).reduce((sum, pid) => sum + cpuMicros(pid), 0)),
    dbCounters: async () => {
      if (db === undefined) return undefined
      const [transactions, keyLookups, alertLookups, walBytes] = psql(COUNTERS_SQL, db).trim().split("|").map(Number)
      const writes = psql(WRITES_SQL, db)
        .trim()
        .split("\n")
        .map((line) => line.split("|"))
        .map(([table, rows]) => [`rows:${table}`, Number(rows)] as const)
      // Counts include the transaction of every earlier call of this query (not this one's, still open). The WAL
      // position is the cluster's: other databases' writes count too (none on a quiet bench host).
      return {
        transactions: transactions ?? 0,
        keyLookups: keyLookups ?? 0,
        alertLookups: alertLookups ?? 0,
        walBytes: walBytes ?? 0,
        ...Object.fromEntries(writes)
      }
    },
    stop: async () => {
      await gateway.stop()
      if (db !== undefined) {
        try {
          psql(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`)
          databases.delete(db)
        } catch {}
      }
    }
  }
}
