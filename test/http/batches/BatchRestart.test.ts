/**
 * A batch survives its gateway: the gateway stops mid-batch (lines in flight under their holds), a new one starts on
 * the same database and finishes the batch from its events — every line has exactly one hold and one settlement, the
 * output file has each line once, the ledger agrees with it line by line (BatchChecks.ts), and nothing stays held. On the real Postgres of `TEST_DATABASE_URL` when set (a fresh
 * database, dropped afterwards), else on a PGlite data directory (test/support/TestDatabase.ts restartableDatabase).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { restartableDatabase } from "../../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { makeAdmin } from "../chat/ChatHarness.ts"
import { assertLineByLine } from "./BatchChecks.ts"
import { batchWhen, submitBatch } from "./SdkBatches.ts"

let slow: RunningSimulator
let dir: string
let configPath: string
let database: Awaited<ReturnType<typeof restartableDatabase>>

beforeAll(async () => {
  slow = await startSimulator({ faults: { latencyMs: 120 } })
  dir = mkdtempSync(join(tmpdir(), "tollgate-batch-restart-"))
  configPath = join(dir, "tollgate.yaml")
  // On a PGlite data directory the first start loads the suites' migrated template; the restart opens what it left.
  database = await restartableDatabase(dir)
  writeFileSync(
    configPath,
    `
upstreams:
  slow: { protocol: openai, baseUrl: "${slow.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: slow-model, plugin: text, upstreams: [slow], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
`
  )
})

afterAll(async () => {
  await database?.drop()
  await slow?.close()
  rmSync(dir, { recursive: true, force: true })
})

const start = (again = false) =>
  startTestGateway({
    configPath,
    database: database.opening(again ? 2 : 1),
    batches: { leaseMillis: 600, pollMillis: 100, concurrency: 4, chunk: 8 }
  })

const client = (gateway: TestGateway, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

it("resumes after a restart: each line held once, billed once, in the output once", async () => {
  let gateway = await start()
  const admin = makeAdmin(gateway)
  const customer = await admin.customer({ deposit: "10" })
  let openai = client(gateway, customer.key)
  const lines = Array.from({ length: 24 }, (_, i) => ({
    custom_id: `line-${i}`,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "slow-model", messages: [{ role: "user", content: `Line ${i}.` }], max_tokens: 32 }
  }))
  const created = await submitBatch(openai, lines)
  for (let i = 0; i < 100; i++) {
    if (((await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0) >= 4) break
    await new Promise((resolve) => setTimeout(resolve, 30))
  }
  await gateway.close()

  gateway = await start(true)
  openai = client(gateway, customer.key)
  expect((await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0).toBeLessThan(24)
  const batch = await batchWhen(openai, created.id, (status) => status === "completed", { reads: 200 })
  expect(batch.status).toBe("completed")
  expect(batch.request_counts).toEqual({ total: 24, completed: 24, failed: 0 })
  const output = (await (await openai.files.content(batch.output_file_id as string)).text()).trim().split("\n")
  const ledger = await makeAdmin(gateway).ledger(customer.accountId)
  assertLineByLine(
    output.map((line) => JSON.parse(line)),
    lines.map((line) => line.custom_id),
    ledger,
    { input: 75_000n, output: 300_000n }
  )
  const balance = await makeAdmin(gateway).balance(customer.accountId)
  expect(balance.held).toBe("0.000000")
  await gateway.close()
}, 45_000)
