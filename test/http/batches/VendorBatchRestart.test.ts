import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { restartableDatabase } from "../../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { makeAdmin } from "../chat/ChatHarness.ts"
import { BATCH_PRICES, ceilPerMillion, micros } from "./BatchHarness.ts"
import { batchWhen, fileLines, submitBatch } from "./SdkBatches.ts"

let sim: RunningSimulator
let lagging: RunningSimulator
let dir: string
let configPath: string
let database: Awaited<ReturnType<typeof restartableDatabase>>

const upstreams = (name: string, url: string) => `
  ${name}-openai: { protocol: openai, baseUrl: "${url}/v1", apiKey: "sk-sim-test-key", batch: true }
  ${name}-anthropic: { protocol: anthropic, baseUrl: "${url}", apiKey: "sk-sim-test-key", batch: true }`
const models = (name: string) => `
  - { id: ${name}-openai, plugin: text, upstreams: [${name}-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: ${name}-anthropic, plugin: text, upstreams: [${name}-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60", batchInput: "0.10", batchOutput: "0.40" } }`

beforeAll(async () => {
  sim = await startSimulator({ batchMillis: 1_500 })
  // Every answer comes late: a gateway stopped meanwhile never reads it, though the simulator acts on the request.
  lagging = await startSimulator({ batchMillis: 300, faults: { latencyMs: 700 } })
  dir = mkdtempSync(join(tmpdir(), "tollgate-vendor-restart-"))
  configPath = join(dir, "tollgate.yaml")
  database = await restartableDatabase(dir)
  writeFileSync(
    configPath,
    `upstreams:${upstreams("vb", sim.baseUrl)}${upstreams("lag", lagging.baseUrl)}
models:${models("vb")}${models("lag")}
batches: { vendorPollMillis: 100, leaseSeconds: 1 }
`
  )
}, 60_000)

afterAll(async () => {
  await database?.drop()
  await sim?.close()
  await lagging?.close()
  rmSync(dir, { recursive: true, force: true })
})

let started = 0
const start = () => {
  started += 1
  return startTestGateway({
    configPath,
    database: database.opening(started),
    batches: { pollMillis: 50 }
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const posts = (server: RunningSimulator, path: string) =>
  server.calls().filter((call) => call.method === "POST" && call.path === path).length
const until = async (what: string, done: () => boolean, ms = 10_000) => {
  for (const end = Date.now() + ms; !done(); await sleep(20)) if (Date.now() > end) throw new Error(what)
}

const submit = async (gateway: TestGateway, key: string, prefix: string) => {
  const openai = new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  const lines = Array.from({ length: 20 }, (_, i) => ({
    custom_id: `l-${i}`,
    method: "POST",
    url: "/v1/chat/completions",
    body: {
      model: `${prefix}-${i % 2 === 0 ? "openai" : "anthropic"}`,
      messages: [{ role: "user", content: `N ${i}` }]
    }
  }))
  return (await submitBatch(openai, lines)).id
}

/** Waits for the batch on a new gateway; checks it line by line against the ledger. */
const finish = async (gateway: TestGateway, customer: { key: string; accountId: string }, batchId: string) => {
  const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
  const batch = await batchWhen(openai, batchId, (status) => status === "completed", { reads: 200 })
  expect(batch.request_counts).toEqual({ total: 20, completed: 20, failed: 0 })
  const output = await fileLines(openai, batch.output_file_id as string)
  expect(output.map((line) => line.custom_id)).toEqual(Array.from({ length: 20 }, (_, i) => `l-${i}`))
  const admin = makeAdmin(gateway)
  const ledger = await admin.ledger(customer.accountId)
  const holds = ledger.filter((entry) => entry.type === "HoldPlaced" && entry.requestId?.startsWith(`${batchId}/`))
  expect(holds).toHaveLength(20)
  for (const line of output) {
    const body = line.response.body
    const prices = BATCH_PRICES[body.model.endsWith("anthropic") ? "sim-anthropic" : "sim-openai"] as {
      input: bigint
      output: bigint
    }
    const expected =
      ceilPerMillion(body.usage.prompt_tokens, prices.input) +
      ceilPerMillion(body.usage.completion_tokens, prices.output)
    const hold = ledger.filter((entry) => entry.type === "HoldPlaced" && entry.requestId === line.response.request_id)
    expect(hold).toHaveLength(1)
    const settled = ledger.filter((entry) => entry.type === "UsageRecalculated" && entry.holdId === hold[0]?.holdId)
    expect(settled).toHaveLength(1)
    expect(micros(String(settled[0]?.data.captured))).toBe(expected)
  }
  expect((await admin.balance(customer.accountId)).held).toBe("0.000000")
}

it("resumes polling after a restart, and finds a batch the vendor took before its id was recorded", async () => {
  let gateway = await start()
  const customer = await makeAdmin(gateway).customer({ deposit: "10" })

  // (1) Stopped while both vendor batches are pending and polled (their ids recorded before the first poll).
  const first = await submit(gateway, customer.key, "vb")
  const polled = (path: string) => sim.calls().some((call) => call.method === "GET" && call.path.startsWith(path))
  await until("both vendor batches polled", () => polled("/v1/batches/") && polled("/v1/messages/batches/"))
  await gateway.close()
  gateway = await start()
  await finish(gateway, customer, first)
  expect(posts(sim, "/v1/batches")).toBe(1)
  expect(posts(sim, "/v1/messages/batches")).toBe(1)

  // (2) Stopped while the vendor is still answering OpenAI's submission: the vendor has the batch, the gateway no id.
  const second = await submit(gateway, customer.key, "lag")
  await until("OpenAI's submission sent", () => posts(lagging, "/v1/batches") === 1)
  await gateway.close()
  await sleep(800) // the simulator acts on the submission it had
  gateway = await start()
  await finish(gateway, customer, second)
  expect(posts(lagging, "/v1/batches")).toBe(1)
  expect(posts(lagging, "/v1/messages/batches")).toBe(1)
  expect(lagging.calls().some((call) => call.method === "GET" && call.path === "/v1/batches")).toBe(true)
  await gateway.close()
}, 60_000)
