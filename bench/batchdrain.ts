/**
 * Interactive latency while a gateway-run batch drains (issue 33): the same non-streamed chat completion sent N times
 * on one connection to a model whose one deployment allows `--slots` calls at once, first with nothing else running,
 * then while a batch of `--lines` lines on the same model drains (its worker allowed more lines at once than the
 * deployment has slots, so only `batches.deploymentSharePercent` — 50% — holds it back). Prints p50/p99 of both, the
 * batch lines finished meanwhile, and whether any interactive call was refused. Embedded store, as bench/latency.ts,
 * or with `--postgres` a fresh database on `BENCH_DATABASE_URL` or `TEST_DATABASE_URL`, dropped afterwards.
 *
 *   npm run bench -- batchdrain [--requests 300] [--lines 2000] [--slots 8] [--upstream-ms 50] [--postgres]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Redacted } from "effect"
import { Agent, request } from "undici"
import { startSimulator } from "../src/adapters/simulator/SimulatorServer.ts"
import { fundedKey } from "./suite/AdminCalls.ts"
import { submitChatBatch, retrieveBatch } from "../test/http/batches/BatchChecks.ts"
import { createPostgresDatabase } from "../test/support/TestDatabase.ts"
import { startTestGateway } from "../test/support/TestGateway.ts"
import { benchOptions } from "./Options.ts"

const { number: arg, flag } = benchOptions("batchdrain")
const requests = arg("requests", 300)
const lines = arg("lines", 2000)
const slots = arg("slots", 8)
const upstreamMs = arg("upstream-ms", 50)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number

const simulator = await startSimulator({ faults: { latencyMs: upstreamMs } })
const dir = mkdtempSync(join(tmpdir(), "tollgate-batchdrain-"))
const configPath = join(dir, "tollgate.yaml")
writeFileSync(
  configPath,
  `
upstreams:
  sim: { protocol: openai, baseUrl: "${simulator.baseUrl}/v1", apiKey: "${simulator.apiKey}", timeoutMs: 20000 }
models:
  - id: drain-model
    plugin: text
    upstreamModel: sim-openai
    deployments: [{ upstream: sim, maxConcurrency: ${slots} }]
    pricing: { input: "0.15", output: "0.60" }
batches: { deploymentSharePercent: 50, concurrency: ${slots * 2} }
`
)
const postgresUrl = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL
if (flag("postgres") && postgresUrl === undefined) throw new Error("--postgres: set BENCH_DATABASE_URL")
const postgres = flag("postgres") ? await createPostgresDatabase(postgresUrl as string) : undefined
const gateway = await startTestGateway({
  configPath,
  batches: { pollMillis: 100 },
  ...(postgres === undefined ? {} : { database: { kind: "postgres", url: Redacted.make(postgres.url) } })
})
const interactiveKey = await fundedKey(gateway.url, gateway.adminToken, "interactive", "1000")
const batchKey = await fundedKey(gateway.url, gateway.adminToken, "batch", "1000")

const dispatcher = new Agent({ connections: 1, pipelining: 1 })
const body = JSON.stringify({
  model: "drain-model",
  messages: [{ role: "user", content: "Hello there" }],
  max_tokens: 24
})
const time = async (count: number) => {
  const samples: Array<number> = []
  let refused = 0
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint()
    const response = await request(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${interactiveKey}`, "content-type": "application/json" },
      body,
      dispatcher
    })
    await response.body.arrayBuffer()
    if (response.statusCode !== 200) refused += 1
    samples.push(Number(process.hrtime.bigint() - started) / 1e6)
  }
  return { samples: samples.sort((a, b) => a - b), refused }
}

await time(50)
const idle = await time(requests)
const { batchId } = await submitChatBatch(gateway.url, batchKey, "drain-model", lines)
// Let the batch reach its share before measuring.
for (
  let i = 0;
  i < 100 && ((await retrieveBatch(gateway.url, batchKey, batchId)).request_counts?.completed ?? 0) < slots;
  i++
) {
  await new Promise((resolve) => setTimeout(resolve, 50))
}
const before = (await retrieveBatch(gateway.url, batchKey, batchId)).request_counts?.completed ?? 0
const began = Date.now()
const draining = await time(requests)
const seconds = (Date.now() - began) / 1000
const after = await retrieveBatch(gateway.url, batchKey, batchId)
const row = (label: string, run: { samples: ReadonlyArray<number>; refused: number }) =>
  console.log(
    `${label.padEnd(30)} p50 ${percentile(run.samples, 50).toFixed(1)} ms   p99 ${percentile(run.samples, 99).toFixed(1)} ms   refused ${run.refused}`
  )
console.log(
  `upstream ${upstreamMs} ms per call; deployment of ${slots} slots; batch share 50%; ${requests} sequential calls`
)
row("interactive, nothing else", idle)
row("interactive, batch draining", draining)
console.log(
  `batch: ${(after.request_counts?.completed ?? 0) - before} lines finished during the second run (${(((after.request_counts?.completed ?? 0) - before) / seconds).toFixed(1)} lines/s), status ${after.status}, ${after.request_counts?.completed}/${lines} done`
)
await gateway.close()
await postgres?.drop()
await simulator.close()
await dispatcher.close()
rmSync(dir, { recursive: true, force: true })
process.exit(0)
