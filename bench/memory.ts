/**
 * `npm run bench -- memory`: what the gateway holds at rest, and what each part of the stack costs.
 *
 * Parts are measured cumulatively, each step in a fresh node process that loads everything before it plus one more
 * part, collects garbage twice and reports its RSS; the difference between two steps is that part's cost. Then the
 * gateway itself (dist/gateway/main.js, as `npm start` runs it) is started idle on a fresh Postgres
 * database and on the embedded store, and its RSS read from /proc once it has answered `/healthz` and settled.
 * Postgres comes from `BENCH_DATABASE_URL` or `TEST_DATABASE_URL` (default the local server); needs `psql`.
 */
import { execFileSync, spawn } from "node:child_process"
import { mkdtempSync, openSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { startedGateway, waitFor } from "./suite/Processes.ts"
import { benchOptions } from "./Options.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The stack's parts, in the order the gateway loads them; each line is appended to the ones before it. */
const allParts: ReadonlyArray<{ readonly name: string; readonly code: string }> = [
  {
    name: "effect (core, http, sql, cli)",
    code: `await import("effect"); await import("effect/http"); await import("effect/sql"); await import("effect/cli")`
  },
  { name: "@effect/platform-node", code: `await import("@effect/platform-node")` },
  { name: "@effect/sql-pg", code: `await import("@effect/sql-pg")` },
  { name: "undici", code: `await import("undici")` },
  { name: "o200k tokenizer", code: `await import("gpt-tokenizer/encoding/o200k_base")` },
  { name: "prom-client", code: `await import("prom-client")` },
  {
    name: "PGlite, started (empty database)",
    code: `const { PGlite } = await import("@electric-sql/pglite"); const db = new PGlite(); await db.waitReady`
  }
]

const rssOf = (code: string, loader: boolean): number => {
  const script = `${code}\nglobalThis.gc(); await new Promise((r) => setTimeout(r, 300)); globalThis.gc();\nconsole.log(process.memoryUsage().rss)`
  const out = execFileSync(
    process.execPath,
    ["--expose-gc", ...(loader ? ["--import", "tsx"] : []), "--input-type=module", "-e", script],
    { cwd: root, encoding: "utf8" }
  )
  return Number(out.trim().split("\n").at(-1))
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0))
    })
  })

const rssOfPid = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"))
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024
}

/** The gateway started idle with `env`; its RSS once it answers and has been quiet for `settleMs`. */
const gatewayIdle = async (env: Record<string, string>, logFile: string, settleMs = 5_000) => {
  const port = await freePort()
  const log = openSync(logFile, "a")
  const script = startedGateway()
  const child = spawn(process.execPath, [...(script.endsWith(".ts") ? ["--import", "tsx"] : []), script], {
    cwd: root,
    env: { ...process.env, ...env, PORT: String(port), TOLLGATE_ADMIN_TOKEN: "bench-memory-admin-token-0123456789" },
    stdio: ["ignore", log, log]
  })
  try {
    const started = Date.now()
    await waitFor(
      (signal) => fetch(`http://127.0.0.1:${port}/readyz`, { signal }).then((r) => r.status === 200),
      120,
      `the gateway; its log: ${logFile}`
    )
    const ready = Date.now() - started
    await sleep(settleMs)
    return { rss: rssOfPid(child.pid ?? 0), readyMs: ready }
  } finally {
    child.kill("SIGTERM")
    await new Promise((resolve) => child.once("exit", resolve))
  }
}

const baseUrl =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"

console.log(`memory: node ${process.version}, ${new Date().toISOString()}`)
const rows: Array<[string, number, number | undefined]> = []
const bare = rssOf("", false)
rows.push(["node alone", bare, undefined])
const withLoader = rssOf("", true)
rows.push(["+ tsx loader (--import tsx)", withLoader, withLoader - bare])
let code = ""
let previous = withLoader
const parts = benchOptions("memory").flag("gateway-only") ? [] : allParts
for (const part of parts) {
  code += `${part.code}\n`
  const rss = rssOf(code, true)
  rows.push([`+ ${part.name}`, rss, rss - previous])
  previous = rss
}
console.log("\n| step (cumulative) | RSS MB | this part MB |\n| --- | --- | --- |")
for (const [name, rss, delta] of rows)
  console.log(`| ${name} | ${mb(rss)} | ${delta === undefined ? "—" : mb(delta)} |`)

const database = `tollgate_memory_${Date.now()}`
const psql = (sql: string) => execFileSync("psql", [baseUrl, "-qAtc", sql], { stdio: "pipe" })
psql(`CREATE DATABASE ${database}`)
const dataDir = mkdtempSync(join(tmpdir(), "tollgate-memory-"))
let measured = false
try {
  const url = new URL(baseUrl)
  url.pathname = `/${database}`
  const pg = await gatewayIdle({ DATABASE_URL: url.toString() }, join(dataDir, "postgres.log"))
  const embedded = await gatewayIdle({ TOLLGATE_DATA_DIR: join(dataDir, "data") }, join(dataDir, "embedded.log"))
  // The first start creates the database (PGlite's initdb, then the migrations); every later one opens it.
  const reopened = await gatewayIdle({ TOLLGATE_DATA_DIR: join(dataDir, "data") }, join(dataDir, "embedded.log"))
  console.log("\n| gateway idle (dist/gateway/main.js, as `npm start`) | RSS MB | ready in ms |\n| --- | --- | --- |")
  console.log(`| Postgres (DATABASE_URL) | ${mb(pg.rss)} | ${pg.readyMs} |`)
  console.log(`| embedded (PGlite in TOLLGATE_DATA_DIR), first start | ${mb(embedded.rss)} | ${embedded.readyMs} |`)
  console.log(`| embedded, started again on the same data dir | ${mb(reopened.rss)} | ${reopened.readyMs} |`)
  measured = true
} finally {
  psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  if (measured) rmSync(dataDir, { recursive: true, force: true }) // else kept, with the gateways' logs
}
