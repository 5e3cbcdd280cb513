/**
 * A gateway-run batch yields to interactive traffic: its lines take at most `batches.deploymentSharePercent` of a
 * deployment's `maxConcurrency` (here 50% of 4), so interactive calls keep being answered while the batch drains; and
 * each line is admitted under its key's own rate limits (a key allowed one request at a time runs its batch one line
 * at a time). Lines that would go past either wait for a later round instead of failing. A counting proxy in front of
 * the simulator sees how many batch and interactive calls are upstream at once.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, request as forward, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"
import { assertLineByLine, outputOf, submitChatBatch, untilEnded } from "./BatchChecks.ts"

let slow: RunningSimulator
let proxy: Server
let dir: string
let gateway: TestGateway
let admin: Admin
const inFlight = { batch: 0, interactive: 0 }
const most = { batch: 0, interactive: 0, total: 0 }

/** Forwards to the simulator, counting calls in flight by kind (a batch line's prompt is "Line n."). */
const countingProxy = (target: string) =>
  createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const body = Buffer.concat(chunks)
      const kind = body.toString("utf8").includes("Line ") ? "batch" : "interactive"
      inFlight[kind] += 1
      most[kind] = Math.max(most[kind], inFlight[kind])
      most.total = Math.max(most.total, inFlight.batch + inFlight.interactive)
      const upstream = forward(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
        answer.on("end", () => {
          inFlight[kind] -= 1
        })
      })
      upstream.end(body)
    })
  })

beforeAll(async () => {
  slow = await startSimulator({ faults: { latencyMs: 200 } })
  proxy = countingProxy(slow.baseUrl)
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", () => resolve()))
  const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  dir = mkdtempSync(join(tmpdir(), "tollgate-batch-share-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  slow: { protocol: openai, baseUrl: "${proxyUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - id: shared-model
    plugin: text
    upstreamModel: sim-openai
    deployments: [{ upstream: slow, maxConcurrency: 4 }]
    pricing: { input: "0.15", output: "0.60" }
  - { id: open-model, plugin: text, upstreams: [slow], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
batches: { deploymentSharePercent: 50 }
`
  )
  // Eight lines of a batch at once if nothing held them back.
  gateway = await startTestGateway({ configPath, batches: { pollMillis: 50, concurrency: 8, chunk: 16 } })
  admin = makeAdmin(gateway)
})

afterAll(async () => {
  await gateway?.close()
  await new Promise((resolve) => proxy?.close(resolve))
  await slow?.close()
  rmSync(dir, { recursive: true, force: true })
})

const reset = () => {
  most.batch = 0
  most.interactive = 0
  most.total = 0
}

it("takes at most its share of a deployment; interactive calls are answered meanwhile", async () => {
  reset()
  const customer = await admin.customer({ deposit: "10" })
  const { batchId, customIds } = await submitChatBatch(gateway.url, customer.key, "shared-model", 16)
  let draining = true
  const statuses: Array<number> = []
  const interactive = async () => {
    while (draining) {
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "shared-model", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] })
      })
      await response.text()
      statuses.push(response.status)
    }
  }
  const clients = [interactive(), interactive()]
  const batch = await untilEnded(gateway.url, customer.key, batchId, 20_000)
  draining = false
  await Promise.all(clients)

  expect(batch?.status).toBe("completed")
  expect(batch?.request_counts).toEqual({ total: 16, completed: 16, failed: 0 })
  // Two of the deployment's four slots at most, and it used them; the interactive calls had the other two.
  expect(most.batch).toBe(2)
  expect(most.total).toBeLessThanOrEqual(4)
  expect(statuses.length).toBeGreaterThan(4)
  expect(new Set(statuses)).toEqual(new Set([200]))
  const output = await outputOf(gateway.url, customer.key, batch.output_file_id)
  // The batch's own holds: the interactive calls were billed to the same account.
  const entries = await admin.ledger(customer.accountId)
  const lineHolds = new Set(
    entries.filter((e) => e.type === "HoldPlaced" && e.requestId?.startsWith(batchId)).map((e) => e.holdId)
  )
  const ledger = entries.filter((entry) => lineHolds.has(entry.holdId))
  assertLineByLine(output, customIds, ledger, { input: 75_000n, output: 300_000n })
  expect((await admin.balance(customer.accountId)).held).toBe("0.000000")
})

it("runs each line under its key's rate limits: a key allowed one call at a time runs one line at a time", async () => {
  reset()
  const account = await admin.call("POST", "/admin/accounts", { name: "one-at-a-time" })
  await admin.call("POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "5", reference: "one" })
  const key = await admin.call("POST", `/admin/accounts/${account.body.id}/keys`, {
    name: "one",
    rateLimits: { concurrency: 1 }
  })
  const { batchId, customIds } = await submitChatBatch(gateway.url, key.body.key, "open-model", 6)
  const batch = await untilEnded(gateway.url, key.body.key, batchId, 20_000)
  expect(batch?.request_counts).toEqual({ total: 6, completed: 6, failed: 0 })
  expect(most.batch).toBe(1)
  const output = await outputOf(gateway.url, key.body.key, batch.output_file_id)
  assertLineByLine(output, customIds, await admin.ledger(account.body.id), { input: 75_000n, output: 300_000n })
})
