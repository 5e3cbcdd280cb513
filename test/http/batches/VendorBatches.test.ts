/**
 * Vendor batch APIs end to end: upstreams marked `batch: true` take their models' batch lines as vendor batches on the
 * simulator (OpenAI's files and batches, Anthropic's message batches), a Gemini model's lines stay gateway-run, all in
 * one client batch; with the official `openai` and `@anthropic-ai/sdk` clients against the gateway on PGlite. The
 * output (or results), the ledger and `/v1/usage/requests` agree line by line at batch prices; a line the vendor
 * fails is refunded; a cancel reaches the vendor. The restart case is in VendorBatchRestart.test.ts.
 */
import Anthropic from "@anthropic-ai/sdk"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BATCH_LINE_ERROR_MARKER } from "../../../src/adapters/simulator/batches/VendorBatchJobs.ts"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"
import { BATCH_PRICES, ceilPerMillion, micros } from "./BatchHarness.ts"
import { batchWhen, fileLines, submitBatch, usageRows } from "./SdkBatches.ts"

/** The gateway's config: `vb-openai` and `vb-anthropic` batch-capable, `sim-gemini` not; `slow` batches take a minute. */
const vendorConfig = (sim: string, slow: string, refusing: string) => `
upstreams:
  vb-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", batch: true }
  vb-anthropic: { protocol: anthropic, baseUrl: "${sim}", apiKey: "sk-sim-test-key", batch: true }
  sim-gemini: { protocol: gemini, baseUrl: "${sim}", apiKey: "sk-sim-test-key" }
  slow-openai: { protocol: openai, baseUrl: "${slow}/v1", apiKey: "sk-sim-test-key", batch: true }
  refusing: { protocol: openai, baseUrl: "${refusing}/v1", apiKey: "sk-sim-test-key", batch: true }
models:
  - { id: sim-openai, plugin: text, upstreams: [vb-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-anthropic, plugin: text, upstreams: [vb-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60", batchInput: "0.10", batchOutput: "0.40" } }
  - { id: sim-gemini, plugin: text, upstreams: [sim-gemini], upstreamModel: sim-gemini, pricing: { input: "0.15", output: "0.60" }, batchDiscountPercent: 20 }
  - { id: slow-openai, plugin: text, upstreams: [slow-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: refused-openai, plugin: text, upstreams: [refusing], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: vb-embedding, plugin: embeddings, upstreams: [vb-openai], upstreamModel: sim-embedding, pricing: { input: "0.02" } }
batches: { vendorPollMillis: 100 }
`

let sim: RunningSimulator
let slow: RunningSimulator
let refusing: RunningSimulator
let gateway: TestGateway
let admin: Admin
let dir: string

beforeAll(async () => {
  sim = await startSimulator({ batchMillis: 300 })
  slow = await startSimulator({ batchMillis: 60_000 })
  refusing = await startSimulator({ faults: { status: 400 } })
  dir = mkdtempSync(join(tmpdir(), "tollgate-vendor-batches-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, vendorConfig(sim.baseUrl, slow.baseUrl, refusing.baseUrl))
  gateway = await startTestGateway({ configPath, batches: { pollMillis: 50, concurrency: 8, chunk: 64 } })
  admin = makeAdmin(gateway)
}, 30_000)

afterAll(async () => {
  await gateway?.close()
  await sim?.close()
  await slow?.close()
  await refusing?.close()
  rmSync(dir, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const submissions = (server: RunningSimulator, path: string) =>
  server.calls().filter((call) => call.method === "POST" && call.path === path).length

/** `vb-embedding`'s batch price: half its USD 0.02 per 1M input tokens. */
const PRICES: Record<string, { input: bigint; output: bigint }> = {
  ...BATCH_PRICES,
  "vb-embedding": { input: 10_000n, output: 0n }
}

/** The line's price at batch prices from the usage its answer reports (OpenAI's or Anthropic's names). */
const priceOf = (model: string, usage: Record<string, number>) => {
  const prices = PRICES[model] as { input: bigint; output: bigint }
  const input = usage.prompt_tokens ?? usage.input_tokens ?? 0
  const output = usage.completion_tokens ?? usage.output_tokens ?? 0
  return ceilPerMillion(input, prices.input) + ceilPerMillion(output, prices.output)
}

/** Each answered line: one hold, one settlement at its batch price, the same cost in the usage report. */
const assertBilled = async (
  accountId: string,
  key: string,
  answered: ReadonlyArray<{ requestId: string; model: string; usage: Record<string, number> }>,
  refunded: ReadonlyArray<string>
) => {
  const ledger = await admin.ledger(accountId)
  const usage = await usageRows(gateway.url, key)
  let total = 0n
  for (const line of answered) {
    const expected = priceOf(line.model, line.usage)
    expect(expected).toBeGreaterThan(0n)
    const holds = ledger.filter((entry) => entry.type === "HoldPlaced" && entry.requestId === line.requestId)
    expect(holds, line.requestId).toHaveLength(1)
    const settled = ledger.filter((e) => e.type === "UsageRecalculated" && e.holdId === holds[0]?.holdId)
    expect(settled, line.requestId).toHaveLength(1)
    expect(micros(String(settled[0]?.data.captured)), line.requestId).toBe(expected)
    const charge = usage.find((row) => row.requestId === line.requestId)
    expect(charge, line.requestId).toMatchObject({ status: "settled", model: line.model })
    expect(micros(charge?.cost ?? ""), line.requestId).toBe(expected)
    total += expected
  }
  for (const requestId of refunded) {
    expect(usage.find((row) => row.requestId === requestId)).toMatchObject({ status: "released", cost: "0.000000" })
  }
  expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(answered.length + refunded.length)
  const balance = await admin.balance(accountId)
  expect(balance.held).toBe("0.000000")
  expect(micros(balance.captured)).toBe(total)
}

const MODELS = ["sim-openai", "sim-anthropic", "sim-gemini"]
const LINES = 300

describe("vendor batches", () => {
  it("sends each batch-capable model's lines as one vendor batch and runs the others; files, ledger and usage agree", async () => {
    const customer = await admin.customer({ deposit: "20" })
    const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const lines = Array.from({ length: LINES }, (_, i) => ({
      custom_id: `req-${i}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: {
        model: MODELS[i % 3],
        // One line on each vendor fails there (the simulator's fault marker).
        messages: [{ role: "user", content: i === 3 || i === 4 ? `Fail ${BATCH_LINE_ERROR_MARKER}` : `Number ${i}.` }],
        max_tokens: 32
      }
    }))
    const created = await submitBatch(openai, lines)
    const batch = await batchWhen(openai, created.id, (status) => status === "completed", { everyMs: 100, reads: 300 })
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: LINES, completed: LINES - 2, failed: 2 })
    // One vendor batch each for the two batch-capable models; the Gemini lines were called one by one.
    expect(submissions(sim, "/v1/batches")).toBe(1)
    expect(submissions(sim, "/v1/messages/batches")).toBe(1)
    expect(submissions(sim, "/v1/chat/completions")).toBe(0)
    expect(submissions(sim, "/v1/messages")).toBe(0)

    const output = await fileLines(openai, batch.output_file_id as string)
    expect(output.map((line) => line.custom_id)).toEqual(
      lines.filter((_, i) => i !== 3 && i !== 4).map((line) => line.custom_id)
    )
    for (const line of output) {
      // Every answer in OpenAI's chat format, whichever vendor ran it.
      expect(line.response.body.object).toBe("chat.completion")
      expect(MODELS).toContain(line.response.body.model)
    }
    const errors = await fileLines(openai, batch.error_file_id as string)
    expect(errors.map((line) => line.custom_id)).toEqual(["req-3", "req-4"])
    await assertBilled(
      customer.accountId,
      customer.key,
      output.map((line) => ({
        requestId: line.response.request_id,
        model: line.response.body.model,
        usage: line.response.body.usage
      })),
      errors.map((line) => line.response.request_id)
    )
  }, 60_000)

  it("runs a message batch's requests on both vendors' batch APIs, in Anthropic's format", async () => {
    sim.clearCalls()
    const customer = await admin.customer({ deposit: "5" })
    const anthropic = new Anthropic({ apiKey: customer.key, baseURL: gateway.url, maxRetries: 0 })
    const models = ["sim-openai", "sim-anthropic"]
    const created = await anthropic.messages.batches.create({
      requests: Array.from({ length: 20 }, (_, i) => ({
        custom_id: `m-${i}`,
        params: {
          model: models[i % 2] as string,
          max_tokens: 32,
          messages: [{ role: "user" as const, content: `Hello ${i}.` }]
        }
      }))
    })
    let batch = created
    for (let i = 0; i < 200 && batch.processing_status !== "ended"; i++) {
      await sleep(100)
      batch = await anthropic.messages.batches.retrieve(created.id)
    }
    expect(batch.request_counts).toMatchObject({ succeeded: 20, errored: 0 })
    expect(submissions(sim, "/v1/batches")).toBe(1)
    expect(submissions(sim, "/v1/messages/batches")).toBe(1)
    const results: Array<Anthropic.Messages.Batches.MessageBatchIndividualResponse> = []
    for await (const line of await anthropic.messages.batches.results(created.id)) results.push(line)
    expect(results.map((line) => line.custom_id)).toEqual(Array.from({ length: 20 }, (_, i) => `m-${i}`))
    const answered = results.map((line, i) => {
      if (line.result.type !== "succeeded") throw new Error(`${line.custom_id}: ${line.result.type}`)
      expect(line.result.message.type).toBe("message")
      return {
        requestId: `${created.id}/${i}`,
        model: line.result.message.model,
        usage: line.result.message.usage as unknown as Record<string, number>
      }
    })
    await assertBilled(customer.accountId, customer.key, answered, [])
  }, 30_000)

  it("sends an embeddings batch on a batch-capable OpenAI upstream as one vendor batch, billed at batch prices", async () => {
    sim.clearCalls()
    const customer = await admin.customer({ deposit: "5" })
    const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const lines = Array.from({ length: 12 }, (_, i) => ({
      custom_id: `e-${i}`,
      method: "POST",
      url: "/v1/embeddings",
      body: {
        model: "vb-embedding",
        input: i === 5 ? [`Fail ${BATCH_LINE_ERROR_MARKER}`] : [`Text ${i}.`, `And its twin ${i}, a little longer.`],
        ...(i % 2 === 0 ? { dimensions: 8 } : { encoding_format: "base64" })
      }
    }))
    const created = await submitBatch(openai, lines, "/v1/embeddings")
    const batch = await batchWhen(openai, created.id, (status) => status === "completed", { everyMs: 50, reads: 200 })
    expect(batch.request_counts).toEqual({ total: 12, completed: 11, failed: 1 })
    // One vendor batch on the embeddings endpoint, and no interactive embeddings call.
    expect(submissions(sim, "/v1/batches")).toBe(1)
    expect(submissions(sim, "/v1/embeddings")).toBe(0)
    const vendorBatch = sim.calls().find((call) => call.method === "POST" && call.path === "/v1/batches")
    expect(vendorBatch?.body).toMatchObject({ endpoint: "/v1/embeddings" })

    const output = await fileLines(openai, batch.output_file_id as string)
    expect(output.map((line) => line.custom_id)).toEqual(lines.filter((_, i) => i !== 5).map((l) => l.custom_id))
    for (const line of output) {
      // The client's embeddings object, in the format its line asked for.
      const body = line.response.body
      expect(body).toMatchObject({ object: "list", model: "vb-embedding" })
      expect(body.data).toHaveLength(2)
      const even = Number(line.custom_id.slice(2)) % 2 === 0
      expect(body.data.map((item: { index: number }) => item.index)).toEqual([0, 1])
      if (even) expect(body.data[0].embedding).toHaveLength(8)
      else expect(typeof body.data[0].embedding).toBe("string")
      expect(body.usage.prompt_tokens).toBeGreaterThan(0)
    }
    const errors = await fileLines(openai, batch.error_file_id as string)
    expect(errors.map((line) => line.custom_id)).toEqual(["e-5"])
    await assertBilled(
      customer.accountId,
      customer.key,
      output.map((line) => ({
        requestId: line.response.request_id,
        model: "vb-embedding",
        usage: line.response.body.usage
      })),
      errors.map((line) => line.response.request_id)
    )
  }, 30_000)

  it("cancels the vendor's batch when the client cancels, and releases every hold", async () => {
    const customer = await admin.customer({ deposit: "5" })
    const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const lines = Array.from({ length: 6 }, (_, i) => ({
      custom_id: `c-${i}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "slow-openai", messages: [{ role: "user", content: `Wait ${i}.` }], max_tokens: 32 }
    }))
    const created = await submitBatch(openai, lines)
    // Once the vendor has the batch and the gateway polls it (its id recorded), the client cancels.
    for (
      let i = 0;
      i < 100 && !slow.calls().some((c) => c.method === "GET" && c.path.startsWith("/v1/batches/"));
      i++
    ) {
      await sleep(50)
    }
    expect((await admin.balance(customer.accountId)).held).not.toBe("0.000000")
    await openai.batches.cancel(created.id)
    const batch = await batchWhen(openai, created.id, (status) => status === "cancelled", { everyMs: 50, reads: 100 })
    expect(batch.status).toBe("cancelled")
    const cancels = slow.calls().filter((c) => c.method === "POST" && /^\/v1\/batches\/[^/]+\/cancel$/.test(c.path))
    expect(cancels).toHaveLength(1)
    const ledger = await admin.ledger(customer.accountId)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(6)
    expect(ledger.filter((entry) => entry.type === "UsageRecalculated")).toHaveLength(0)
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    expect(balance.captured).toBe("0.000000")
  }, 30_000)

  it("ends the lines of a submission the vendor refuses (a 400) as errored, their holds released, without retrying", async () => {
    const customer = await admin.customer({ deposit: "5" })
    const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    const lines = Array.from({ length: 3 }, (_, i) => ({
      custom_id: `r-${i}`,
      method: "POST",
      url: "/v1/chat/completions",
      body: { model: "refused-openai", messages: [{ role: "user", content: `No ${i}.` }], max_tokens: 32 }
    }))
    const created = await submitBatch(openai, lines)
    const batch = await batchWhen(openai, created.id, (status) => status === "completed", { everyMs: 50, reads: 100 })
    expect(batch.request_counts).toEqual({ total: 3, completed: 0, failed: 3 })
    const errors = (await (await openai.files.content(batch.error_file_id as string)).text()).trim().split("\n")
    expect(errors.map((line) => JSON.parse(line).response.status_code)).toEqual([400, 400, 400])
    // One upload refused, nothing looked for (the group was never sent), nothing sent again.
    expect(refusing.calls().map((call) => `${call.method} ${call.path}`)).toEqual(["POST /v1/files"])
    const ledger = await admin.ledger(customer.accountId)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(3)
    expect(ledger.filter((entry) => entry.type === "RefundIssued")).toHaveLength(3)
    expect((await admin.balance(customer.accountId)).held).toBe("0.000000")
  }, 30_000)
})
