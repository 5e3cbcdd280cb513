/**
 * The ladder (issue 29): the same chat request through five servers, one rung each, in one run and in front of one
 * mock upstream, so that each change shows which rung it moved.
 *
 *   floor    a bare pass-through proxy (node:http + undici, bench/suite/FloorProxy.ts)
 *   effect   Effect's HTTP server with one relaying route (bench/ladder/EffectServer.ts)
 *   memory   Tollgate with holds and settlements decided in memory, never written (bench/ladder/MemoryLedgerGateway.ts)
 *   postgres Tollgate on Postgres (src/main.ts, as `npm start`)
 *   pglite   Tollgate on its embedded PGlite store (src/main.ts without DATABASE_URL)
 *
 * Per rung: CPU per request of the server process (utime + stime of all its threads from /proc, not wall time) at
 * `--connections` (default 32) and at one connection, Postgres backends' CPU per request apart (from /proc, for the
 * backends of the rung's own database), transactions and key / alert-endpoint lookups per request (pg_stat views of
 * that database), p50 at one connection (and the mock's own, called directly in alternation), idle CPU (ms/s) and
 * idle RSS, peak RSS under load, and the time to ready. Servers and the mock run on core 0, the generator on core 1.
 *
 * Last, the first byte of a streamed reply whose upstream thinks 50 ms before its own (the mock's `mock-think`), at one
 * connection, through the rung and straight to the mock in alternating rounds: what the rung adds to the first byte
 * (the hold is meant to commit while the vendor thinks); then a whole non-streamed call to the same thinking upstream,
 * the same way (what the rung adds around a wait, stream or not).
 *
 *   npm run bench -- ladder [--rungs floor,effect,memory,postgres,pglite] [--seconds 10] [--connections 32]
 *                           [--sequential 1000] [--warmup-seconds 3] [--idle-seconds 5] [--think-requests 200]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadResult, SequentialResult } from "../suite/LoadGenerator.ts"
import {
  cores,
  cpuMicros,
  forkGenerator,
  here,
  killAll,
  pin,
  rssBytes,
  rssSampler,
  startMockUpstream
} from "../suite/Processes.ts"
import { type Rung, type RungServer, startRung, uptime } from "./Rungs.ts"
import { benchOptions } from "../Options.ts"

const { argv, option, number } = benchOptions("ladder")
const rungs = (option("rungs") ?? "floor,effect,memory,postgres,pglite").split(",") as Array<Rung>
const seconds = number("seconds", 10)
const connections = number("connections", 32)
const sequentialCount = number("sequential", 1000)
const warmupSeconds = number("warmup-seconds", 3)
const idleSeconds = number("idle-seconds", 5)
const thinkRequests = number("think-requests", 200)
const SERVER_CORE = 0
const GENERATOR_CORE = cores > 1 ? 1 : 0
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

pin(process.pid, GENERATOR_CORE)
const runDir = mkdtempSync(join(tmpdir(), "tollgate-ladder-"))
process.on("exit", () => rmSync(runDir, { recursive: true, force: true }))
const { process: mock, origin: mockOrigin } = await startMockUpstream(runDir, SERVER_CORE)
const generator = await forkGenerator(GENERATOR_CORE)
const loads = [`start: ${uptime()}`]
console.log(`ladder: ${seconds} s at ${connections} connections, ${sequentialCount} sequential; ${loads[0]}`)

const chatBody = (model: string) =>
  JSON.stringify({ model, messages: [{ role: "user", content: "Hello there, how are you today?" }], max_tokens: 24 })
const request = (server: RungServer) => ({
  method: "POST" as const,
  path: "/v1/chat/completions",
  body: chatBody(server.model),
  headers: { "content-type": "application/json", authorization: server.keys[0] ?? "Bearer none" }
})
const direct = { ...request({ model: "mock-fast", keys: [] } as unknown as RungServer), headers: {} }
const streamed = (model: string, authorization: string | undefined) => ({
  method: "POST" as const,
  path: "/v1/chat/completions",
  body: JSON.stringify({
    model,
    stream: true,
    stream_options: { include_usage: true },
    messages: [{ role: "user", content: "Hello there, how are you today?" }],
    max_tokens: 24
  }),
  headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) }
})

/**
 * After the upstream thought 50 ms (the mock's `mock-think`), through the rung and straight from the mock,
 * `thinkRequests` each in ten alternating rounds: a stream's first byte, and a whole non-streamed call (the same wait
 * without the stream: what the gateway adds to either is its own work around the wait).
 */
const afterThinking = async (server: RungServer, stream: boolean) => {
  const through: Array<number> = []
  const straight: Array<number> = []
  const round = Math.max(1, Math.round(thinkRequests / 10))
  const median = (values: Array<number>) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
  const call = (origin: string, model: string, authorization: string | undefined) =>
    generator.run<SequentialResult>({
      kind: "sequential",
      origin,
      request: stream
        ? streamed(model, authorization)
        : {
            ...request({ ...server, model }),
            headers: { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) }
          },
      count: round,
      firstByte: stream
    })
  const measure = (result: SequentialResult) => (stream ? result.firstByte?.p50 : result.latency.p50) ?? Number.NaN
  for (let i = 0; i < 10; i++) {
    straight.push(measure(await call(mockOrigin, "mock-think", undefined)))
    through.push(measure(await call(server.origin, server.thinkingModel, server.keys[0])))
  }
  // The median of the rounds' medians, each side (the method of the public gateway benchmark cited in issue 29).
  const directP50 = median(straight)
  const p50 = median(through)
  return { directP50, p50, addedP50: p50 - directP50 }
}

/** Server and Postgres CPU (µs) and the database's counters around `run`. */
const measured = async <A>(server: RungServer, run: () => Promise<A>) => {
  const pgBefore = server.postgresCpu()
  const statsBefore = await server.dbCounters()
  const before = cpuMicros(server.pid)
  const sampler = rssSampler(server.pid)
  const result = await run()
  const cpu = cpuMicros(server.pid) - before
  const { peak } = sampler.stop()
  const pg = server.postgresCpu() - pgBefore
  // pg_stat counters reach the shared view when a backend goes idle (at most a second later in Postgres 15).
  if (statsBefore !== undefined) await sleep(1_200)
  const statsAfter = await server.dbCounters()
  const counters =
    statsBefore === undefined || statsAfter === undefined
      ? undefined
      : Object.fromEntries(
          // The `before` reading's own transaction is in the difference.
          Object.entries(statsAfter).map(([k, v]) => [k, v - (statsBefore[k] ?? 0) - (k === "transactions" ? 1 : 0)])
        )
  return { result, cpu, pg, peak, counters }
}

const rows: Array<Record<string, unknown>> = []
for (const rung of rungs) {
  const server = await startRung(rung, { runDir, mockOrigin, core: SERVER_CORE, keys: connections })
  if (server === undefined) continue
  console.log(`${rung}: ready in ${server.readyMs} ms (pid ${server.pid})`)
  // Idle: nothing sent for `idleSeconds` after a pause, the process's own timers only.
  await sleep(2_000)
  const idle = await measured(server, () => sleep(idleSeconds * 1000))
  const idleRss = rssBytes(server.pid)
  const req = request(server)
  await generator.run({
    kind: "load",
    origin: server.origin,
    request: req,
    keys: server.keys,
    connections,
    seconds: warmupSeconds,
    rate: 0,
    ttfb: false
  })
  const load = await measured(server, () =>
    generator.run<LoadResult>({
      kind: "load",
      origin: server.origin,
      request: req,
      keys: server.keys,
      connections,
      seconds,
      rate: 0,
      ttfb: false
    })
  )
  // One connection, the mock called directly just before, both seeing the same load on the machine.
  await generator.run<SequentialResult>({ kind: "sequential", origin: server.origin, request: req, count: 100 })
  const mockDirect = await generator.run<SequentialResult>({
    kind: "sequential",
    origin: mockOrigin,
    request: direct,
    count: sequentialCount
  })
  const one = await measured(server, () =>
    generator.run<SequentialResult>({ kind: "sequential", origin: server.origin, request: req, count: sequentialCount })
  )
  const think = thinkRequests > 0 ? await afterThinking(server, true) : undefined
  const thinkWhole = thinkRequests > 0 ? await afterThinking(server, false) : undefined
  const n = load.result.requests
  const per = (value: number | undefined, count: number) => (value === undefined ? undefined : value / count)
  const row = {
    rung,
    readyMs: server.readyMs,
    idleCpuMsPerS: idle.cpu / 1000 / idleSeconds,
    idlePostgresCpuMsPerS: server.hasPostgres ? idle.pg / 1000 / idleSeconds : undefined,
    idleTransactionsPerS: per(idle.counters?.transactions, idleSeconds),
    idleRssMb: idleRss / 1e6,
    rps: load.result.rps,
    cpuUsPerRequest: load.cpu / n,
    postgresCpuUsPerRequest: server.hasPostgres ? load.pg / n : undefined,
    transactionsPerRequest: per(load.counters?.transactions, n),
    keyLookupsPerRequest: per(load.counters?.keyLookups, n),
    alertLookupsPerRequest: per(load.counters?.alertLookups, n),
    walBytesPerRequest: per(load.counters?.walBytes, n),
    // Rows written per request, by table (inserted + updated + deleted), the tables written at all.
    rowsPerRequest:
      load.counters === undefined
        ? undefined
        : Object.fromEntries(
            Object.entries(load.counters)
              .filter(([name, rows]) => name.startsWith("rows:") && rows > 0)
              .map(([name, rows]) => [name.slice(5), Math.round((rows / n) * 1000) / 1000])
          ),
    peakRssMb: load.peak / 1e6,
    non200: n - (load.result.statuses["200"] ?? 0) + load.result.errors,
    oneConnection: {
      p50: one.result.latency.p50,
      p99: one.result.latency.p99,
      directP50: mockDirect.latency.p50,
      addedP50: one.result.latency.p50 - mockDirect.latency.p50,
      cpuUsPerRequest: one.cpu / sequentialCount,
      postgresCpuUsPerRequest: server.hasPostgres ? one.pg / sequentialCount : undefined,
      transactionsPerRequest: per(one.counters?.transactions, sequentialCount),
      keyLookupsPerRequest: per(one.counters?.keyLookups, sequentialCount),
      alertLookupsPerRequest: per(one.counters?.alertLookups, sequentialCount),
      non200: sequentialCount - (one.result.statuses["200"] ?? 0) + one.result.errors
    },
    thinkingFirstByte: think,
    thinkingWholeCall: thinkWhole
  }
  rows.push(row)
  console.log(JSON.stringify(row))
  loads.push(`after ${rung}: ${uptime()}`)
  await server.stop()
}
generator.close()
await mock.stop()

const floor = rows.find((row) => row.rung === "floor")
const f = (value: unknown, digits = 0) =>
  typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : "—"
const header =
  "| rung | req/s | CPU µs/req | × floor CPU | +pg µs/req | xact/req | key/req | alert/req | 1-conn p50 ms (added) | 1-conn CPU µs/req (+pg) | first byte after 50 ms ms (added) | whole call after 50 ms ms (added) | WAL B/req | idle CPU ms/s (+pg) | idle RSS MB | peak RSS MB | ready ms |"
console.log(
  `\n${header}\n|${header
    .split("|")
    .slice(2)
    .map(() => "---")
    .join("|")}|`
)
for (const row of rows) {
  const one = row.oneConnection as Record<string, number | undefined>
  const think = row.thinkingFirstByte as Record<string, number> | undefined
  const thinkWhole = row.thinkingWholeCall as Record<string, number> | undefined
  const ratio = floor === undefined ? undefined : (row.cpuUsPerRequest as number) / (floor.cpuUsPerRequest as number)
  console.log(
    `| ${row.rung} | ${f(row.rps)} | ${f(row.cpuUsPerRequest)} | ${f(ratio, 1)} | ${f(row.postgresCpuUsPerRequest)} | ` +
      `${f(row.transactionsPerRequest, 2)} | ${f(row.keyLookupsPerRequest, 3)} | ${f(row.alertLookupsPerRequest, 3)} | ` +
      `${f(one.p50, 2)} (${f(one.addedP50, 2)}) | ${f(one.cpuUsPerRequest)} (${f(one.postgresCpuUsPerRequest)}) | ` +
      `${f(think?.p50, 2)} (${f(think?.addedP50, 2)}) | ${f(thinkWhole?.p50, 2)} (${f(thinkWhole?.addedP50, 2)}) | ` +
      `${f(row.walBytesPerRequest)} | ` +
      `${f(row.idleCpuMsPerS, 1)} (${f(row.idlePostgresCpuMsPerS, 1)}) | ${f(row.idleRssMb)} | ${f(row.peakRssMb)} | ${f(row.readyMs)} |`
  )
}
for (const line of loads) console.log(`machine ${line}`)
const resultsDir = here("../results")
mkdirSync(resultsDir, { recursive: true })
const file = join(resultsDir, `ladder-${new Date().toISOString().replace(/[:.]/g, "-")}.json`)
writeFileSync(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      command: `npm run bench -- ladder ${argv.join(" ")}`.trim(),
      machine: { cores, node: process.version, load: loads },
      options: { seconds, connections, sequentialCount, warmupSeconds, idleSeconds, thinkRequests },
      rows
    },
    null,
    2
  )
)
console.log(`written ${file}`)
killAll()
process.exit(0)
