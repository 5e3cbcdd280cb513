/**
 * Effect steps, fibers and JavaScript heap allocated per request (issue 29), counted, not timed: the in-memory ladder
 * rung's bundle (dist/ladder-memory, or `--script`) copied with two counters patched into Effect's runtime — one in the
 * fiber's run loop, by primitive (`Success`, `Suspend`, `Iterator`, …), one in the fiber constructor — and a heap
 * profiler of its collections, then driven with chat requests one connection at a time. The counts are exact and the same on a busy host, so a change to the request path
 * shows its steps before its CPU can be told from noise.
 *
 *   npm run bench -- steps [--requests 2000] [--stream] [--sites] [--script <main.js of a memory-rung build>]
 *
 * `--sites` counts each step also by where it comes from: its primitive and the source text of the first function it
 * holds (the continuation, the body, the clock read…), as the bundle spells it. Slower (each step reads a function's
 * text), so it is an option; the list names, for example, how many clock reads or generator bodies a request runs.
 *
 * The patch looks for two lines of Effect's runtime (`this.currentOpCount++;` and the fiber constructor's
 * `recordFiberStart`) and for how a primitive names itself (`makePrimitiveProto`), and stops with an error if this
 * version of `effect` lacks any of them.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { Pool } from "undici"
import { compiled, killAll, startMockUpstream } from "../suite/Processes.ts"
import { startRung, uptime } from "./Rungs.ts"
import { benchOptions } from "../Options.ts"

const { option, number, flag } = benchOptions("steps")
const requests = number("requests", 2000)
const streamed = flag("stream")
const sites = flag("sites")
const script = resolve(option("script") ?? compiled("dist/ladder-memory", "bench/ladder/MemoryLedgerGateway.ts"))

const STEP = "this.currentOpCount++;"
const FIBER = "this.cache.runtimeMetrics?.recordFiberStart(this.context);"
/** With `--sites`: the step counted again under its primitive and the text of the first function it holds. */
const SITE = ` const at = globalThis.__tollgateSteps.sites; let fn = ""; if (current) for (const v of Object.values(current)) if (typeof v === "function") { fn = String(v).replace(/\\s+/g, " ").slice(0, 140); break; } const site = k + " | " + fn; at[site] = (at[site] ?? 0) + 1;`
/**
 * The counters, and the bytes the JavaScript heap took between the first and the second count: a `v8.GCProfiler`
 * runs from one to the other, and what each collection found in use, less what the one before it left, is what was
 * allocated in between (plus what is in use at the end, less what the last one left).
 */
const counts = (file: string) =>
  `;(() => { const counts = { fibers: 0, steps: {}, sites: {}, allocated: 0 }; globalThis.__tollgateSteps = counts;
const v8 = require("node:v8"); const used = () => v8.getHeapStatistics().used_heap_size; let profiler, from = 0;
process.on("SIGUSR2", () => {
  if (profiler === undefined) { profiler = new v8.GCProfiler(); profiler.start(); from = used(); }
  else { const now = used(); let left = from, sum = 0;
    for (const gc of profiler.stop().statistics) {
      sum += gc.beforeGC.heapStatistics.usedHeapSize - left; left = gc.afterGC.heapStatistics.usedHeapSize; }
    counts.allocated = sum + now - left; profiler = undefined; }
  require("node:fs").writeFileSync(${JSON.stringify(file)}, JSON.stringify(counts)); }) })();\n`

/** The bundle with its runtime counting; written beside it, so that its imports resolve as the original's. */
const instrumented = (countsFile: string): string => {
  const text = readFileSync(script, "utf8")
  if (!text.includes(STEP) || !text.includes(FIBER)) {
    throw new Error(
      `${script}: this version of effect's runtime has no ${JSON.stringify(STEP)} or fiber start to count`
    )
  }
  // The symbol under which a primitive names itself (`op`), as this bundle spells it.
  const op = /makePrimitiveProto\d* = \(options\d*\) => \(\{\s*\.\.\.EffectProto\d*,\s*\[(\w+)\]: options\d*\.op/.exec(
    text
  )?.[1]
  if (op === undefined) throw new Error(`${script}: no makePrimitiveProto to read the primitives' names from`)
  const patched = text
    .replace(
      STEP,
      `${STEP} { const s = globalThis.__tollgateSteps.steps; const k = current?.[${op}] ?? current?._tag ?? "?"; s[k] = (s[k] ?? 0) + 1;${sites ? SITE : ""} }`
    )
    .replace(FIBER, `globalThis.__tollgateSteps.fibers++; ${FIBER}`)
  // After the bundle's own banner (its imports must stay first); the counters exist before any fiber runs.
  const out = join(dirname(script), "main.steps.js")
  const firstImportEnd = patched.indexOf("\n", patched.indexOf("const require = "))
  writeFileSync(out, `${patched.slice(0, firstImportEnd + 1)}${counts(countsFile)}${patched.slice(firstImportEnd + 1)}`)
  return out
}

const runDir = mkdtempSync(join(tmpdir(), "tollgate-steps-"))
const countsFile = join(runDir, "counts.json")
process.env.BENCH_MEMORY_SCRIPT = instrumented(countsFile)
const { origin: mockOrigin } = await startMockUpstream(runDir, 0)
const server = await startRung("memory", { runDir, mockOrigin, core: 0, keys: 1 })
if (server === undefined) throw new Error("the in-memory rung did not start")

const pool = new Pool(server.origin, { connections: 1 })
const body = JSON.stringify({
  model: server.model,
  ...(streamed ? { stream: true, stream_options: { include_usage: true } } : {}),
  messages: [{ role: "user", content: "Hello there, how are you today?" }],
  max_tokens: 24
})
const send = async (count: number) => {
  for (let i = 0; i < count; i++) {
    const response = await pool.request({
      method: "POST",
      path: "/v1/chat/completions",
      body,
      headers: { "content-type": "application/json", authorization: server.keys[0] ?? "" }
    })
    await response.body.text()
    if (response.statusCode !== 200) throw new Error(`status ${response.statusCode}`)
  }
}
type Counts = {
  readonly fibers: number
  readonly allocated: number
  readonly steps: Record<string, number>
  readonly sites: Record<string, number>
}
const read = async (): Promise<Counts> => {
  process.kill(server.pid, "SIGUSR2")
  for (let i = 0; i < 100; i++) {
    await new Promise((done) => setTimeout(done, 20))
    try {
      const counted = JSON.parse(readFileSync(countsFile, "utf8")) as Counts
      writeFileSync(countsFile, "")
      return counted
    } catch {}
  }
  throw new Error("the gateway did not write its counts")
}

await send(200) // first requests: caches filled, code paths taken once
const before = await read()
await send(requests)
const after = await read()
await pool.close()
await server.stop()
killAll()

const perRequest = (a: number, b: number) => (b - a) / requests
const kinds = Object.keys(after.steps)
  .map((kind) => [kind, perRequest(before.steps[kind] ?? 0, after.steps[kind] ?? 0)] as const)
  .filter(([, n]) => n >= 0.05)
  .sort((x, y) => y[1] - x[1])
const total = kinds.reduce((sum, [, n]) => sum + n, 0)
console.log(
  `steps: ${requests} ${streamed ? "streamed" : "non-streamed"} chat requests on the in-memory rung (${script})`
)
console.log(
  `per request: ${total.toFixed(1)} Effect steps, ${perRequest(before.fibers, after.fibers).toFixed(2)} fibers`
)
console.log(`JavaScript heap allocated per request: ${(after.allocated / requests / 1024).toFixed(1)} KB`)
console.log(`by primitive: ${kinds.map(([kind, n]) => `${kind} ${n.toFixed(1)}`).join(", ")}`)
if (sites) {
  console.log("by site (primitive | the first function it holds), at least one per request:")
  const bySite = Object.keys(after.sites)
    .map((site) => [site, perRequest(before.sites[site] ?? 0, after.sites[site] ?? 0)] as const)
    .filter(([, n]) => n >= 0.95)
    .sort((x, y) => y[1] - x[1])
  for (const [site, n] of bySite) console.log(`${n.toFixed(1).padStart(7)}  ${site}`)
}
console.log(`machine: ${uptime()}`)
process.exit(0)
