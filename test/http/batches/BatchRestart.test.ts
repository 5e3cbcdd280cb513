/**
 * A batch survives its gateway: the gateway stops mid-batch (lines in flight under their holds), a new one starts on
 * the same database and finishes the batch from its events — every line has exactly one hold and one settlement, the
 * output file has each line once, and nothing stays held.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI, { toFile } from "openai"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { makeAdmin } from "../chat/ChatHarness.ts"

let slow: RunningSimulator
let dir: string
let configPath: string

beforeAll(async () => {
  slow = await startSimulator({ faults: { latencyMs: 120 } })
  dir = mkdtempSync(join(tmpdir(), "tollgate-batch-restart-"))
  configPath = join(dir, "tollgate.yaml")
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
  await slow?.close()
  rmSync(dir, { recursive: true, force: true })
})

const start = (dataDir: string) =>
  startTestGateway({
    configPath,
    database: { kind: "pglite", dataDir },
    batches: { leaseMillis: 600, pollMillis: 100, concurrency: 4, chunk: 8 }
  })

const client = (gateway: TestGateway, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

it("resumes after a restart: each line held once, billed once, in the output once", async () => {
  const dataDir = join(dir, "db")
  let gateway = await start(dataDir)
  const admin = makeAdmin(gateway)
  const customer = await admin.customer({ deposit: "10" })
  let openai = client(gateway, customer.key)
  const lines = Array.from({ length: 24 }, (_, i) => ({
    custom_id: `line-${i}`,
    method: "POST",
    url: "/v1/chat/completions",
    body: { model: "slow-model", messages: [{ role: "user", content: `Line ${i}.` }], max_tokens: 32 }
  }))
  const content = `${lines.map((line) => JSON.stringify(line)).join("\n")}\n`
  const file = await openai.files.create({ file: await toFile(Buffer.from(content), "in.jsonl"), purpose: "batch" })
  const created = await openai.batches.create({
    input_file_id: file.id,
    endpoint: "/v1/chat/completions",
    completion_window: "24h"
  })
  for (let i = 0; i < 100; i++) {
    if (((await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0) >= 4) break
    await new Promise((resolve) => setTimeout(resolve, 30))
  }
  await gateway.close()

  gateway = await start(dataDir)
  openai = client(gateway, customer.key)
  let batch = await openai.batches.retrieve(created.id)
  expect(batch.request_counts?.completed ?? 0).toBeLessThan(24)
  for (let i = 0; i < 200 && batch.status !== "completed"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    batch = await openai.batches.retrieve(created.id)
  }
  expect(batch.status).toBe("completed")
  expect(batch.request_counts).toEqual({ total: 24, completed: 24, failed: 0 })
  const output = (await (await openai.files.content(batch.output_file_id as string)).text()).trim().split("\n")
  expect(output.map((line) => JSON.parse(line).custom_id)).toEqual(lines.map((line) => line.custom_id))

  const ledger = await makeAdmin(gateway).ledger(customer.accountId)
  const holds = ledger.filter((entry) => entry.type === "HoldPlaced")
  expect(new Set(holds.map((entry) => entry.holdId)).size).toBe(24)
  expect(holds).toHaveLength(24)
  const settled = ledger.filter((entry) => entry.type === "UsageRecalculated")
  expect(new Set(settled.map((entry) => entry.holdId)).size).toBe(24)
  expect(settled).toHaveLength(24)
  const balance = await makeAdmin(gateway).balance(customer.accountId)
  expect(balance.held).toBe("0.000000")
  await gateway.close()
}, 30_000)
