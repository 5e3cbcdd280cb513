/**
 * The benchmark suite of issue 10: the gateway (spawned as `src/main.ts`, billing on) on a real Postgres and on the
 * embedded store, against a bare pass-through proxy (the floor) measured in the same run, all in front of one mock
 * upstream that answers at once. Servers and the mock run on core 0, the load generator on core 1 (taskset).
 *
 *   npm run bench -- suite [--quick] [--seconds 10] [--soak-seconds 600] [--targets floor,postgres,embedded]
 *                          [--scenarios 1,2,3,4,5,6,7] [--warmup-seconds 3]
 *
 * Postgres: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres) names a server where a fresh
 * database is created for the run and dropped after. Results: stdout and bench/results/<timestamp>.json.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import type { LoadResult, Request, SequentialResult, StreamsResult } from "./LoadGenerator.ts"
import {
  cores,
  cpuMicros,
  forkGenerator,
  freePort,
  here,
  killAll,
  pin,
  postgresBackends,
  rssBytes,
  rssSampler,
  type Spawned,
  spawnNode,
  startedGateway,
  startMockUpstream,
  waitFor
} from "./Processes.ts"
import { adminPost, fundedKey } from "./AdminCalls.ts"
import { benchOptions } from "../Options.ts"

const { argv, option, number, flag } = benchOptions("suite")
const quick = flag("quick")
const seconds = number("seconds", quick ? 3 : 10)
const warmupSeconds = number("warmup-seconds", quick ? 1 : 3)
const soakSeconds = number("soak-seconds", quick ? 10 : 600)
const sequentialCount = quick ? 300 : 2000
const openStreams = number("streams", 1000)
const holdMs = quick ? 10_000 : 20_000
const targets = (option("targets") ?? "floor,postgres,embedded").split(",") as Array<Target>
const scenarios = new Set((option("scenarios") ?? "1,2,3,4,5,6,7").split(",").map(Number))
const CONNECTIONS = 64
const SERVER_CORE = 0
const GENERATOR_CORE = cores > 1 ? 1 : 0

type Target = "floor" | "postgres" | "embedded"

interface Row {
  scenario: string
  target: Target | "mock"
  rps?: number
  p50?: number
  p99?: number
  cpuUsPerRequest?: number
  postgresCpuUsPerRequest?: number
  peakRssMb: number
  ratioToFloor?: number
  requests?: number
  non200: number
  errors: number
  notes: Record<string, number | string>
}

const rows: Array<Row> = []
const record = (row: Row) => {
  rows.push(row)
  const n = (value: number | undefined, digits: number) => (value === undefined ? "—" : value.toFixed(digits))
  console.log(
    `  ${row.target} · ${row.scenario}: ${n(row.rps, 0)} req/s, p50 ${n(row.p50, 2)} ms, p99 ${n(row.p99, 2)} ms, ` +
      `non-200 ${row.non200}, errors ${row.errors}`
  )
}
const runDir = mkdtempSync(join(tmpdir(), "tollgate-bench-"))
const adminToken = randomBytes(24).toString("hex")
const loads: Array<string> = []
const uptime = () => {
  try {
    return execFileSync("uptime", { encoding: "utf8" }).trim()
  } catch {
    return `load average: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(", ")}`
  }
}

// The suite's own sampling stays off the server's core.
pin(process.pid, GENERATOR_CORE)

// --- the mock upstream and the generator ------------------------------------------------------------------------
const { process: mock, origin: mockOrigin } = await startMockUpstream(runDir, SERVER_CORE, {
  MOCK_HOLD_MS: String(holdMs)
})
const generator = await forkGenerator(GENERATOR_CORE)
console.log(
  `suite: ${quick ? "quick" : "full"} run, ${seconds} s per scenario (best of 2), cores ${cores}, ` +
    `taskset ${generator.pinned ? `server+mock on core ${SERVER_CORE}, generator on core ${GENERATOR_CORE}` : "unavailable"}`
)
loads.push(`start: ${uptime()}`)

// --- requests ---------------------------------------------------------------------------------------------------
const chatBody = (model: string, stream = false) =>
  JSON.stringify({
    model,
    messages: [{ role: "user", content: "Hello there, how are you today?" }],
    max_tokens: 24,
    ...(stream ? { stream: true } : {})
  })
const messagesBody = (model: string) =>
  JSON.stringify({ model, max_tokens: 24, messages: [{ role: "user", content: "Hello there, how are you today?" }] })
const json = { "content-type": "application/json" }
const post = (path: string, body: string, headers: Record<string, string> = {}): Request => ({
  method: "POST",
  path,
  body,
  headers: { ...json, ...headers }
})
/** The floor forwards bodies untouched, so it names the mock's models; the gateway maps its own model ids to them. */
const models = (target: Target) =>
  target === "floor" ? { chat: "mock-fast", hold: "mock-hold" } : { chat: "bench-chat", hold: "bench-hold" }

// --- servers ----------------------------------------------------------------------------------------------------
interface Server {
  readonly target: Target
  readonly origin: string
  readonly process: Spawned
  readonly loopDelayFile: string
  readonly database?: string
  keys: Array<string>
  hotKey: string
}

const configFile = join(runDir, "tollgate.yaml")
writeFileSync(
  configFile,
  `upstreams:
  mock-openai: { protocol: openai, baseUrl: "${mockOrigin}/v1", apiKey: "mock", maxConnections: 2048 }
models:
  - { id: bench-chat, plugin: text, upstreams: [mock-openai], upstreamModel: mock-fast, pricing: { input: "0.10", output: "0.40" }, maxOutputTokens: 256 }
  - { id: bench-hold, plugin: text, upstreams: [mock-openai], upstreamModel: mock-hold, pricing: { input: "0.10", output: "0.40" }, maxOutputTokens: 256 }
`
)

const postgresBase = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const databases = new Set<string>()
process.on("exit", () => {
  killAll()
  rmSync(runDir, { recursive: true, force: true })
  for (const database of databases) {
    try {
      psql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    } catch {
      // reported by the run that created it
    }
  }
})
const psql = (sql: string) =>
  execFileSync("psql", [postgresBase, "-v", "ON_ERROR_STOP=1", "-qc", sql], { stdio: "pipe" })

const fundedKeyOf = (origin: string, name: string) => fundedKey(origin, adminToken, name, "100000")

const start = async (target: Target): Promise<Server | undefined> => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const loopDelayFile = join(runDir, `${target}.loop-delay.jsonl`)
  const logFile = join(runDir, `${target}.log`)
  if (target === "floor") {
    const floor = spawnNode(here("./FloorProxy.ts"), {
      env: { PORT: String(port), UPSTREAM: mockOrigin },
      logFile,
      core: SERVER_CORE,
      loopDelayFile
    })
    await waitFor((signal) => fetch(`${origin}/`, { signal }).then(() => true), 30, "floor proxy")
    return { target, origin, process: floor, loopDelayFile, keys: [], hotKey: "Bearer none" }
  }
  let database: string | undefined
  const env: Record<string, string> = {
    PORT: String(port),
    TOLLGATE_ADMIN_TOKEN: adminToken,
    TOLLGATE_CONFIG: configFile
  }
  if (target === "postgres") {
    database = `tollgate_bench_${Date.now()}`
    try {
      psql(`CREATE DATABASE ${database}`)
      databases.add(database)
    } catch (error) {
      console.log(`postgres: skipped, cannot create a database on ${postgresBase}: ${String(error).split("\n")[0]}`)
      return undefined
    }
    const url = new URL(postgresBase)
    url.pathname = `/${database}`
    env.DATABASE_URL = url.toString()
  } else {
    env.TOLLGATE_DATA_DIR = join(runDir, "embedded-data")
  }
  // What `npm start` runs (dist/gateway/main.js, built when stale), or BENCH_GATEWAY_SCRIPT: another build of it.
  const gateway = spawnNode(startedGateway(), {
    env,
    logFile,
    core: SERVER_CORE,
    loopDelayFile
  })
  await waitFor(
    (signal) => fetch(`${origin}/readyz`, { signal }).then((r) => r.status === 200),
    120,
    `gateway (${target}); see ${logFile}`
  )
  const keys: Array<string> = []
  for (let i = 0; i < CONNECTIONS; i++) keys.push(`Bearer ${await fundedKeyOf(origin, `bench-${i}`)}`)
  const hotKey = `Bearer ${await fundedKeyOf(origin, "bench-hot")}`
  return { target, origin, process: gateway, loopDelayFile, ...(database ? { database } : {}), keys, hotKey }
}

// --- measuring --------------------------------------------------------------------------------------------------
/** The gateway's ledger-writer counters from `/metrics` (open in the bench: no metrics token); none for the floor. */
const writerCounters = async (server: Server) => {
  if (server.target === "floor") return undefined
  const text = await fetch(`${server.origin}/metrics`).then((r) => r.text())
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? Number.NaN)
  return {
    batches: value("tollgate_ledger_batches_total"),
    commands: value("tollgate_ledger_commands_total"),
    retries: value("tollgate_ledger_batch_retries_total")
  }
}

interface Measured<A> {
  result: A
  /** What the ledger writers did during the run: batches, commands and batches decided again. */
  writer: { batches: number; commands: number; retries: number } | undefined
  cpuUs: number
  /** Share of one core the load generator used: near 100% means the generator, not the server, was the limit. */
  generatorCorePercent: number
  postgresCpuUs: number | undefined
  peakRss: number
  rssSamples: Array<{ at: number; rss: number }>
}

const measure = async <A>(server: Server, job: unknown): Promise<Measured<A>> => {
  const backends = server.database === undefined ? [] : postgresBackends(server.database)
  const pgBefore = backends.reduce((sum, pid) => sum + cpuMicros(pid), 0)
  const before = cpuMicros(server.process.pid)
  const sampler = rssSampler(server.process.pid)
  const writerBefore = await writerCounters(server)
  const generatorBefore = cpuMicros(generator.pid)
  const startedAt = process.hrtime.bigint()
  const result = await generator.run<A>(job)
  const wallUs = Number(process.hrtime.bigint() - startedAt) / 1000
  const generatorCorePercent = ((cpuMicros(generator.pid) - generatorBefore) / wallUs) * 100
  const { peak, samples } = sampler.stop()
  const cpuUs = cpuMicros(server.process.pid) - before
  const postgresCpuUs =
    server.database === undefined ? undefined : backends.reduce((sum, pid) => sum + cpuMicros(pid), 0) - pgBefore
  const writerAfter = await writerCounters(server)
  const writer =
    writerBefore === undefined || writerAfter === undefined
      ? undefined
      : {
          batches: writerAfter.batches - writerBefore.batches,
          commands: writerAfter.commands - writerBefore.commands,
          retries: writerAfter.retries - writerBefore.retries
        }
  return { result, writer, cpuUs, generatorCorePercent, postgresCpuUs, peakRss: peak, rssSamples: samples }
}

const non200 = (statuses: Record<string, number>) =>
  Object.entries(statuses).reduce((sum, [status, count]) => sum + (status === "200" ? 0 : count), 0)

const mb = (bytes: number) => Math.round(bytes / 1e5) / 10

/** Runs a load job twice and keeps the better run (higher requests/s). */
const loadScenario = async (
  scenario: string,
  server: Server,
  request: Request,
  keys: ReadonlyArray<string>,
  ttfb = false
) => {
  let best: Measured<LoadResult> | undefined
  for (let round = 0; round < 2; round++) {
    const measured = await measure<LoadResult>(server, {
      kind: "load",
      origin: server.origin,
      request,
      keys,
      connections: CONNECTIONS,
      seconds,
      rate: 0,
      ttfb
    })
    if (best === undefined || measured.result.rps > best.result.rps) best = measured
  }
  const { result, writer, cpuUs, postgresCpuUs, peakRss, generatorCorePercent } = best!
  const row: Row = {
    scenario,
    target: server.target,
    rps: result.rps,
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUsPerRequest: cpuUs / result.requests,
    ...(postgresCpuUs === undefined ? {} : { postgresCpuUsPerRequest: postgresCpuUs / result.requests }),
    peakRssMb: mb(peakRss),
    requests: result.requests,
    non200: non200(result.statuses),
    errors: result.errors + result.timeouts,
    notes: {
      ...(result.ttfb === undefined ? {} : { ttfbP50: result.ttfb.p50, ttfbP99: result.ttfb.p99 }),
      // The group commit at work: ledger commands per transaction, and batches decided again per request.
      ...(writer === undefined || writer.batches === 0
        ? {}
        : {
            commandsPerBatch: Math.round((writer.commands / writer.batches) * 10) / 10,
            retriesPerRequest: Math.round((writer.retries / result.requests) * 1e4) / 1e4
          }),
      generatorCorePercent
    }
  }
  record(row)
  return row
}

const loopDelayIn = (file: string, from: number, to: number) => {
  if (!existsSync(file)) return undefined
  const lines = readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as { t: number; p50: number; p99: number; max: number })
    .filter((line) => line.t >= from && line.t <= to + 500)
  if (lines.length === 0) return undefined
  return {
    p99: Math.max(...lines.map((l) => l.p99)),
    max: Math.max(...lines.map((l) => l.max))
  }
}

// --- scenarios --------------------------------------------------------------------------------------------------
const S = {
  1: "1 chat, 64 conns, key per conn",
  2: "2 chat, 64 conns, one hot key",
  3: "3 chat streamed (20 chunks), 64 conns",
  4: "4 one connection, sequential",
  5: "5 messages → openai upstream",
  6: `6 ${openStreams} open streams`,
  7: "7 soak at 50% of max"
} as const

const directRequest = post("/v1/chat/completions", chatBody("mock-fast"))
const sequential = (origin: string, request: Request, count = sequentialCount) =>
  generator.run<SequentialResult>({ kind: "sequential", origin, request, count })

const replays: Record<string, unknown> = {}
let soak: Record<string, unknown> | undefined

for (const target of targets) {
  const server = await start(target)
  if (server === undefined) continue
  console.log(`${target}: up at ${server.origin} (pid ${server.process.pid}); warming up`)
  const m = models(target)
  const chat = post("/v1/chat/completions", chatBody(m.chat), { authorization: server.keys[0] ?? server.hotKey })
  await generator.run({
    kind: "load",
    origin: server.origin,
    request: chat,
    keys: server.keys,
    connections: CONNECTIONS,
    seconds: warmupSeconds,
    rate: 0,
    ttfb: false
  })
  if (scenarios.has(1)) await loadScenario(S[1], server, chat, server.keys)
  if (scenarios.has(2)) {
    await loadScenario(S[2], server, { ...chat, headers: { ...chat.headers, authorization: server.hotKey } }, [])
  }
  if (scenarios.has(3)) {
    const streamed = post("/v1/chat/completions", chatBody(m.chat, true), { authorization: chat.headers.authorization })
    await loadScenario(S[3], server, streamed, server.keys, true)
  }
  if (scenarios.has(4)) {
    // The mock called directly, interleaved with the target so both see the same machine load.
    let best: Measured<SequentialResult> | undefined
    let direct: SequentialResult | undefined
    await sequential(mockOrigin, directRequest, 200)
    await sequential(server.origin, chat, 200)
    for (let round = 0; round < 2; round++) {
      const baseline = await sequential(mockOrigin, directRequest)
      if (direct === undefined || baseline.latency.p50 < direct.latency.p50) direct = baseline
      const measured = await measure<SequentialResult>(server, {
        kind: "sequential",
        origin: server.origin,
        request: chat,
        count: sequentialCount
      })
      if (best === undefined || measured.result.latency.p50 < best.result.latency.p50) best = measured
    }
    const { result, cpuUs, postgresCpuUs, peakRss } = best!
    record({
      scenario: S[4],
      target,
      p50: result.latency.p50,
      p99: result.latency.p99,
      cpuUsPerRequest: cpuUs / sequentialCount,
      ...(postgresCpuUs === undefined ? {} : { postgresCpuUsPerRequest: postgresCpuUs / sequentialCount }),
      peakRssMb: mb(peakRss),
      requests: sequentialCount,
      non200: non200(result.statuses) + non200(direct!.statuses),
      errors: result.errors + direct!.errors,
      notes: {
        directP50: direct!.latency.p50,
        directP99: direct!.latency.p99,
        addedP50: result.latency.p50 - direct!.latency.p50,
        addedP99: result.latency.p99 - direct!.latency.p99
      }
    })
  }
  if (scenarios.has(5)) {
    const messages = post("/v1/messages", messagesBody(m.chat), {
      authorization: chat.headers.authorization,
      "anthropic-version": "2023-06-01"
    })
    // The floor has no conversion to do: it relays the messages request to the mock's Anthropic endpoint.
    await loadScenario(S[5], server, messages, server.keys)
  }
  if (scenarios.has(6)) {
    // What the process held just before the streams opened: the peak is read against it (issue 29's "above idle").
    const before = rssBytes(server.process.pid)
    const measured = await measure<StreamsResult>(server, {
      kind: "streams",
      origin: server.origin,
      request: post("/v1/chat/completions", chatBody(m.hold, true)),
      keys: server.keys.length > 0 ? server.keys : [server.hotKey],
      count: openStreams,
      probe: chat,
      maxProbes: 2000
    })
    const { result, peakRss } = measured
    const delay = loopDelayIn(server.loopDelayFile, result.windowStart, result.windowEnd)
    record({
      scenario: S[6],
      target,
      p50: result.probe.p50,
      p99: result.probe.p99,
      peakRssMb: mb(peakRss),
      non200: non200(result.statuses) + result.probe.failed,
      errors: result.errors + (openStreams - result.completed),
      notes: {
        opened: result.opened,
        completed: result.completed,
        rssBeforeMb: mb(before),
        openSeconds: result.openSeconds,
        probes: result.probe.count,
        loopDelayP99: delay?.p99 ?? Number.NaN,
        loopDelayMax: delay?.max ?? Number.NaN
      }
    })
  }
  if (scenarios.has(7) && target === "postgres" && soakSeconds > 0) {
    const max = rows.find((row) => row.scenario === S[1] && row.target === target)?.rps
    if (max === undefined) {
      console.log("soak: skipped (scenario 1 gives the maximum it runs at half of)")
    } else {
      const rate = Math.max(1, Math.round(max / 2))
      console.log(`${target}: soak at ${rate} req/s for ${soakSeconds} s`)
      const measured = await measure<LoadResult>(server, {
        kind: "load",
        origin: server.origin,
        request: chat,
        keys: server.keys,
        connections: CONNECTIONS,
        seconds: soakSeconds,
        rate,
        ttfb: false,
        windowSeconds: Math.max(1, Math.round(soakSeconds / 10))
      })
      const { result, cpuUs, peakRss, rssSamples } = measured
      const step = Math.max(1, Math.floor(rssSamples.length / 10))
      soak = {
        target,
        rate,
        seconds: soakSeconds,
        windows: result.windows,
        rssMb: rssSamples.filter((_, i) => i % step === 0).map((s) => ({ at: s.at, mb: mb(s.rss) }))
      }
      record({
        scenario: `${S[7]} (${soakSeconds} s)`,
        target,
        rps: result.rps,
        p50: result.latency.p50,
        p99: result.latency.p99,
        cpuUsPerRequest: cpuUs / result.requests,
        peakRssMb: mb(peakRss),
        requests: result.requests,
        non200: non200(result.statuses),
        errors: result.errors + result.timeouts,
        notes: {}
      })
    }
  }
  if (target !== "floor") {
    const replay = await adminPost(server.origin, adminToken, "/admin/replay").catch((error: unknown) => ({
      ok: false,
      error: String(error)
    }))
    replays[target] = replay
    console.log(`${target}: POST /admin/replay → ok ${String(replay.ok)}`)
  }
  loads.push(`after ${target}: ${uptime()}`)
  await server.process.stop()
  if (server.database !== undefined) {
    try {
      psql(`DROP DATABASE IF EXISTS ${server.database} WITH (FORCE)`)
      databases.delete(server.database)
    } catch {
      console.log(`postgres: could not drop ${server.database}`)
    }
  }
}

generator.close()
await mock.stop()

// --- report -----------------------------------------------------------------------------------------------------
for (const row of rows) {
  if (row.target === "floor" || row.target === "mock" || row.rps === undefined) continue
  const floor = rows.find((other) => other.scenario === row.scenario && other.target === "floor")
  if (floor?.rps !== undefined) row.ratioToFloor = row.rps / floor.rps
}

// NaN crosses IPC as null.
const f = (value: number | null | undefined, digits = 1) =>
  value === undefined || value === null || Number.isNaN(value) ? "—" : value.toFixed(digits)
const noteText = (row: Row) =>
  Object.entries(row.notes)
    .map(([key, value]) => `${key} ${typeof value === "string" ? value : f(value, value >= 100 ? 0 : 2)}`)
    .join(", ")
const header = [
  "scenario",
  "target",
  "req/s",
  "p50 ms",
  "p99 ms",
  "CPU µs/req",
  "+pg µs/req",
  "peak RSS MB",
  "× floor",
  "non-200/errors",
  "notes"
]
const table = [
  `| ${header.join(" | ")} |`,
  `|${header.map(() => "---").join("|")}|`,
  ...rows.map(
    (row) =>
      `| ${[
        row.scenario,
        row.target,
        f(row.rps, 0),
        f(row.p50, 2),
        f(row.p99, 2),
        f(row.cpuUsPerRequest, 0),
        f(row.postgresCpuUsPerRequest, 0),
        row.peakRssMb === 0 ? "—" : f(row.peakRssMb),
        f(row.ratioToFloor, 2),
        `${row.non200}/${row.errors}`,
        noteText(row)
      ].join(" | ")} |`
  )
]
console.log(`\n${table.join("\n")}\n`)
for (const line of loads) console.log(`machine ${line}`)
if (soak !== undefined)
  console.log(`soak windows: ${JSON.stringify(soak.windows)}\nsoak RSS: ${JSON.stringify(soak.rssMb)}`)

const resultsDir = here("../results")
mkdirSync(resultsDir, { recursive: true })
const stamp = new Date().toISOString().replace(/[:.]/g, "-")
const file = join(resultsDir, `${stamp}.json`)
writeFileSync(
  file,
  JSON.stringify(
    {
      date: new Date().toISOString(),
      command: `npm run bench -- suite ${argv.join(" ")}`.trim(),
      machine: { cores, node: process.version, load: loads },
      options: { quick, seconds, soakSeconds, sequentialCount, openStreams, holdMs, connections: CONNECTIONS },
      rows,
      soak,
      replay: replays
    },
    null,
    2
  )
)
console.log(`written ${file}`)
killAll()
rmSync(runDir, { recursive: true, force: true })
process.exit(0)
