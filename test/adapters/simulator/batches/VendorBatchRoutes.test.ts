/**
 * The simulator's vendor batch endpoints with the official SDKs pointed straight at it: OpenAI's files and batches,
 * Anthropic's message batches. A batch is in progress until `batchMillis` after its submit, then carries each request's
 * answer with the usage the interactive endpoint reports for the same body; the fault marker fails one request; a
 * cancel ends a batch still in progress.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI, { toFile } from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BATCH_LINE_ERROR_MARKER } from "../../../../src/adapters/simulator/batches/VendorBatchJobs.ts"
import { type RunningSimulator, startSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"

let sim: RunningSimulator
beforeAll(async () => {
  sim = await startSimulator({ batchMillis: 150 })
})
afterAll(async () => {
  await sim?.close()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const chat = (text: string) => ({
  model: "sim-openai",
  messages: [{ role: "user" as const, content: text }],
  max_tokens: 16
})

describe("simulator vendor batches", () => {
  it("serves OpenAI's files and batches, with the interactive endpoint's usage per line", async () => {
    const openai = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
    const lines = [chat("Hello there."), chat(`Fail ${BATCH_LINE_ERROR_MARKER}`)].map((body, i) =>
      JSON.stringify({ custom_id: `c-${i}`, method: "POST", url: "/v1/chat/completions", body })
    )
    const file = await openai.files.create({
      file: await toFile(Buffer.from(lines.join("\n")), "in.jsonl"),
      purpose: "batch"
    })
    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { tag: "t1" }
    })
    expect(created.status).toBe("in_progress")
    expect((await openai.batches.list({ limit: 10 })).data[0]).toMatchObject({
      id: created.id,
      metadata: { tag: "t1" }
    })
    await sleep(200)
    const batch = await openai.batches.retrieve(created.id)
    expect(batch.status).toBe("completed")
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 })
    const output = JSON.parse((await (await openai.files.content(batch.output_file_id as string)).text()).trim())
    const interactive = await openai.chat.completions.create(chat("Hello there."))
    expect(output.custom_id).toBe("c-0")
    expect(output.response.body.usage).toEqual(interactive.usage)
    const error = JSON.parse((await (await openai.files.content(batch.error_file_id as string)).text()).trim())
    expect(error).toMatchObject({ custom_id: "c-1", response: { status_code: 500 } })

    const cancelled = await openai.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h"
    })
    await openai.batches.cancel(cancelled.id)
    expect((await openai.batches.retrieve(cancelled.id)).status).toBe("cancelled")
  })

  it("answers an embeddings batch's lines as its interactive embeddings endpoint does", async () => {
    const openai = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
    const body = { model: "sim-embedding", input: ["Hello there.", "And again."], dimensions: 4 }
    const lines = [body, { ...body, input: [`Fail ${BATCH_LINE_ERROR_MARKER}`] }].map((line, i) =>
      JSON.stringify({ custom_id: `e-${i}`, method: "POST", url: "/v1/embeddings", body: line })
    )
    const file = await openai.files.create({
      file: await toFile(Buffer.from(lines.join("\n")), "in.jsonl"),
      purpose: "batch"
    })
    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/embeddings",
      completion_window: "24h"
    })
    await sleep(200)
    const batch = await openai.batches.retrieve(created.id)
    expect(batch).toMatchObject({ status: "completed", endpoint: "/v1/embeddings" })
    expect(batch.request_counts).toEqual({ total: 2, completed: 1, failed: 1 })
    const output = JSON.parse((await (await openai.files.content(batch.output_file_id as string)).text()).trim())
    const interactive = await openai.embeddings.create({ ...body, encoding_format: "float" })
    expect(output.custom_id).toBe("e-0")
    expect(output.response.body.data).toEqual(interactive.data)
    expect(output.response.body.usage).toEqual(interactive.usage)
  })

  it("serves Anthropic's message batches and their results", async () => {
    const anthropic = new Anthropic({ apiKey: sim.apiKey, baseURL: sim.baseUrl, maxRetries: 0 })
    const params = (text: string) => ({
      model: "sim-anthropic",
      max_tokens: 16,
      messages: [{ role: "user" as const, content: text }]
    })
    const created = await anthropic.messages.batches.create({
      requests: [
        { custom_id: "a", params: params("Hello there.") },
        { custom_id: "b", params: params(`Fail ${BATCH_LINE_ERROR_MARKER}`) }
      ]
    })
    expect(created.processing_status).toBe("in_progress")
    await sleep(200)
    const batch = await anthropic.messages.batches.retrieve(created.id)
    expect(batch.processing_status).toBe("ended")
    expect(batch.request_counts).toMatchObject({ succeeded: 1, errored: 1 })
    const results: Array<Anthropic.Messages.Batches.MessageBatchIndividualResponse> = []
    for await (const line of await anthropic.messages.batches.results(created.id)) results.push(line)
    const interactive = await anthropic.messages.create(params("Hello there."))
    const first = results[0]?.result
    expect(first?.type === "succeeded" ? first.message.usage : undefined).toEqual(interactive.usage)
    expect(results[1]?.result.type).toBe("errored")

    const cancelled = await anthropic.messages.batches.create({ requests: [{ custom_id: "c", params: params("Hi.") }] })
    await anthropic.messages.batches.cancel(cancelled.id)
    const ended = await anthropic.messages.batches.retrieve(cancelled.id)
    expect(ended).toMatchObject({ processing_status: "ended", request_counts: { canceled: 1 } })
  })
})
