/**
 * Paired runs (issue 29): two builds of one ladder rung side by side, loaded in alternating rounds, so that a change of
 * a few percent shows through this host's drift (a single 10 s ladder run of one rung varies by about ±10 %). Both
 * servers run at once on core 0 with the mock upstream, the load generator on core 1; each round loads A then B (B
 * then A on odd rounds) for `--seconds` at `--connections`, and reads each server's CPU (and its Postgres backends')
 * per request from /proc. The figure to read is the median of the per-round ratios B ÷ A, next to both medians.
 *
 * The server started second reads 2.5–4 % less CPU than the one started first, whatever the build (bench/README.md,
 * "The paired bench's own bias"): so both are restarted halfway, in the other order, and half of the rounds run with
 * each order.
 *
 *   npm run bench -- paired --a <main.js> --b <main.js> [--rung postgres|memory|pglite] [--rounds 8] [--seconds 5]
 *                           [--connections 32] [--stream] [--a-env K=V,…] [--b-env K=V,…]
 *
 * `--a-env` / `--b-env` start that side's server with these environment variables too: one build under two settings
 * the process reads at its start (a V8 or allocator variable, say), given the same build as `--a` and `--b`.
 *
 * A build is a bundle made by `node scripts/build-gateway.mjs --out <folder inside the repository>` (add
 * `--entry bench/ladder/MemoryLedgerGateway.ts` for the memory rung), e.g. one from a stash of the change, one with it.
 */
import { mkdirSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import type { LoadResult } from "../suite/LoadGenerator.ts"
import { cpuMicros, forkGenerator, killAll, pin, startMockUpstream } from "../suite/Processes.ts"
import { type Rung, type RungServer, startRung, uptime } from "./Rungs.ts"
import { benchOptions } from "../Options.ts"

const { option, number, flag } = benchOptions("paired")
const scriptA = option("a")
const scriptB = option("b")
if (scriptA === undefined || scriptB === undefined) {
  console.error("usage: npm run bench -- paired --a <main.js> --b <main.js> [--rung postgres] [--rounds 8] [--stream]")
  process.exit(2)
}
const rung = (option("rung") ?? "postgres") as Rung
if (rung !== "postgres" && rung !== "memory" && rung !== "pglite") {
  console.error(`--rung: postgres, memory or pglite, not ${rung}`)
  process.exit(2)
}
const rounds = number("rounds", 8)
const seconds = number("seconds", 5)
const connections = number("connections", 32)
const streamed = flag("stream")
const envOf = (text: string | undefined): Record<string, string> =>
  Object.fromEntries(
    (text ?? "")
      .split(",")
      .filter((pair) => pair.includes("="))
      .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])
  )
const sideEnv = { A: envOf(option("a-env")), B: envOf(option("b-env")) }

pin(process.pid, 1)
const runDir = mkdtempSync(join(tmpdir(), "tollgate-paired-"))
const { origin: mockOrigin } = await startMockUpstream(runDir, 0)

/** The rung with `script` in place of its usual build (the variables the ladder reads for before/after runs). */
const start = async (script: string, side: string, env: Record<string, string>): Promise<RungServer> => {
  process.env[rung === "memory" ? "BENCH_MEMORY_SCRIPT" : "BENCH_GATEWAY_SCRIPT"] = resolve(script)
  // Each side in its own folder: its config, log and (PGlite) data directory.
  const sideDir = join(runDir, side)
  mkdirSync(sideDir)
  // The server inherits this process's environment as it starts: the side's variables only for its start.
  const saved = Object.fromEntries(Object.keys(env).map((name) => [name, process.env[name]]))
  Object.assign(process.env, env)
  try {
    const server = await startRung(rung, { runDir: sideDir, mockOrigin, core: 0, keys: connections })
    if (server === undefined) throw new Error(`${rung}: could not start ${script}`)
    return server
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  }
}
/** Both servers, the one started first first: half of the rounds run with each order (see the header). */
const startBoth = async (first: "A" | "B", half: number): Promise<Record<"A" | "B", RungServer>> => {
  const startSide = (name: "A" | "B") =>
    start(name === "A" ? scriptA : scriptB, `${name.toLowerCase()}${half}`, sideEnv[name])
  const one = await startSide(first)
  const other = await startSide(first === "A" ? "B" : "A")
  return first === "A" ? { A: one, B: other } : { A: other, B: one }
}
let servers = await startBoth("A", 0)
const generator = await forkGenerator(1)
const body = JSON.stringify({
  model: servers.A.model,
  ...(streamed ? { stream: true, stream_options: { include_usage: true } } : {}),
  messages: [{ role: "user", content: "Hello there, how are you today?" }],
  max_tokens: 24
})
const load = (server: RungServer, forSeconds: number) =>
  generator.run<LoadResult>({
    kind: "load",
    origin: server.origin,
    request: {
      method: "POST",
      path: "/v1/chat/completions",
      body,
      headers: { "content-type": "application/json", authorization: server.keys[0] ?? "" }
    },
    keys: server.keys,
    connections,
    seconds: forSeconds,
    rate: 0,
    ttfb: false
  })

const envText = (env: Record<string, string>) =>
  Object.keys(env).length === 0
    ? ""
    : ` (${Object.entries(env)
        .map(([name, value]) => `${name}=${value}`)
        .join(", ")})`
console.log(
  `paired ${rung}${streamed ? ", streamed" : ""}: A ${scriptA}${envText(sideEnv.A)}, B ${scriptB}${envText(sideEnv.B)}; start: ${uptime()}`
)
for (const server of Object.values(servers)) await load(server, 3)
type Round = { readonly cpu: number; readonly pg: number; readonly rps: number }
const results: Record<"A" | "B", Array<Round>> = { A: [], B: [] }
for (let round = 0; round < rounds; round++) {
  if (round === Math.ceil(rounds / 2)) {
    // The second half: both restarted, B first.
    await servers.A.stop()
    await servers.B.stop()
    servers = await startBoth("B", 1)
    for (const server of Object.values(servers)) await load(server, 3)
  }
  for (const name of round % 2 === 0 ? (["A", "B"] as const) : (["B", "A"] as const)) {
    const server = servers[name]
    const cpu = cpuMicros(server.pid)
    const pg = server.postgresCpu()
    const result = await load(server, seconds)
    const ok = result.statuses["200"] ?? 0
    if (ok !== result.requests) throw new Error(`${name}: ${result.requests - ok} answers were not 200`)
    results[name].push({
      cpu: (cpuMicros(server.pid) - cpu) / result.requests,
      pg: (server.postgresCpu() - pg) / result.requests,
      rps: result.rps
    })
  }
}
generator.close()
await servers.A.stop()
await servers.B.stop()
killAll()

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((x, y) => x - y)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}
const figure = (pick: (round: Round) => number) => {
  const a = results.A.map(pick)
  const b = results.B.map(pick)
  return { a: median(a), b: median(b), ratio: median(b.map((value, i) => value / (a[i] as number))) }
}
const table = [
  ["gateway CPU µs/req", figure((r) => r.cpu)],
  ["Postgres CPU µs/req", figure((r) => r.pg)],
  ["req/s", figure((r) => r.rps)]
] as const
console.log("| figure | A (median) | B (median) | B ÷ A (median of rounds) |\n|---|---|---|---|")
for (const [name, { a, b, ratio }] of table) {
  console.log(`| ${name} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${Number.isFinite(ratio) ? ratio.toFixed(3) : "—"} |`)
}
console.log(`rounds (gateway CPU µs/req): A ${results.A.map((r) => r.cpu.toFixed(0)).join(" ")}`)
console.log(`                             B ${results.B.map((r) => r.cpu.toFixed(0)).join(" ")}`)
console.log(`machine after: ${uptime()}`)
process.exit(0)
