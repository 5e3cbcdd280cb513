/**
 * What an idle gateway costs (issue 29): `src/main.ts` started on a fresh Postgres database (or embedded with
 * `--pglite`), left alone, and measured over `--seconds`: its CPU (ms per second, utime + stime of every thread from
 * /proc), the CPU of the Postgres backends serving its database and the transactions they ran. With
 * `BENCH_CPU_PROF_DIR` set the gateway writes a V8 CPU profile there when it stops (what woke it);
 * `BENCH_GATEWAY_SCRIPT` runs another checkout's entry point for a before/after pair. The window opens
 * `--settle-seconds` after ready: a start is followed by one full collection of its garbage once the process is
 * quiet (src/adapters/runtime/IdleCollection.ts), which a window opened early counts as idle work.
 *
 *   npm run bench -- idle [--seconds 30] [--settle-seconds 3] [--pglite]
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { cpuMicros, rssBytes } from "./suite/Processes.ts"
import { startRung, uptime } from "./ladder/Rungs.ts"
import { benchOptions } from "./Options.ts"

const { number, flag } = benchOptions("idle")
const seconds = number("seconds", 30)
const settleSeconds = number("settle-seconds", 3)
const rung = flag("pglite") ? "pglite" : "postgres"
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const runDir = mkdtempSync(join(tmpdir(), "tollgate-idle-"))
const server = await startRung(rung, { runDir, mockOrigin: "http://127.0.0.1:9", core: 0, keys: 1 })
if (server === undefined) process.exit(1)
console.log(`${rung}: ready in ${server.readyMs} ms; ${uptime()}`)
await sleep(settleSeconds * 1000)
const before = { cpu: cpuMicros(server.pid), pg: server.postgresCpu(), db: await server.dbCounters() }
await sleep(seconds * 1000)
const after = { cpu: cpuMicros(server.pid), pg: server.postgresCpu(), db: await server.dbCounters() }
const per = (a: number, b: number) => (b - a) / 1000 / seconds
console.log(
  `idle over ${seconds} s: gateway ${per(before.cpu, after.cpu).toFixed(2)} ms CPU/s, ` +
    (server.hasPostgres
      ? `Postgres backends ${per(before.pg, after.pg).toFixed(2)} ms CPU/s, ` +
        `${(((after.db?.transactions ?? 0) - (before.db?.transactions ?? 0) - 1) / seconds).toFixed(2)} transactions/s, `
      : "") +
    `RSS ${(rssBytes(server.pid) / 1e6).toFixed(0)} MB; ${uptime()}`
)
await server.stop()
rmSync(runDir, { recursive: true, force: true })
process.exit(0)
