/**
 * Batches end to end with the official `openai` SDK: files.create, batches.create/retrieve/list/cancel and
 * files.content against the real gateway on PGlite, with lines on three vendors' simulators (and one that always
 * fails). The output file, the ledger and the usage report must agree line by line at batch prices.
 */
import OpenAI, { toFile } from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { formatMicros } from "../../../src/domain/Money.ts"
import type { TestGateway } from "../../support/TestGateway.ts"
import type { Admin } from "../chat/ChatHarness.ts"
import { BATCH_PRICES, type BatchGateway, ceilPerMillion, micros, startBatchGateway } from "./BatchHarness.ts"
import { batchWhen, fileLines, jsonl, submitBatch, usageRows } from "./SdkBatches.ts"

let harness: BatchGateway
let gateway: TestGateway
let admin: Admin

beforeAll(async () => {
  harness = await startBatchGateway()
  gateway = harness.gateway
  admin = harness.admin
}, 30_000)

afterAll(async () => {
  await harness?.close()
})

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

const request = (customId: string, model: string, text: string, extra: Record<string, unknown> = {}) => ({
  custom_id: customId,
  method: "POST",
  url: "/v1/chat/completions",
  body: { model, messages: [{ role: "user", content: text }], max_tokens: 64, ...extra }
})

const waitFor = (openai: OpenAI, id: string, done: (status: string) => boolean) =>
  batchWhen(openai, id, done, { reads: 200 })

const ledgerOf = async (accountId: string) => admin.ledger(accountId)

describe("batches on the OpenAI surface", () => {
  it("runs every line on its vendor, billed at batch prices, and the output, ledger and usage agree", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const openai = client(customer.key)
    const models = ["sim-openai", "sim-anthropic", "sim-gemini"]
    const lines = [
      ...Array.from({ length: 24 }, (_, i) =>
        request(`req-${i}`, models[i % 3] as string, `Say something short about the number ${i}.`)
      ),
      request("req-broken", "broken-model", "This upstream always fails.")
    ]
    const file = await openai.files.create({
      file: await toFile(Buffer.from(jsonl(lines)), "in.jsonl"),
      purpose: "batch"
    })
    expect(file).toMatchObject({ object: "file", purpose: "batch", filename: "in.jsonl" })
    // Kept 30 days (the operator's default retention, OpenAI's for batch files), unless the upload says otherwise.
    expect(file.expires_at).toBe(file.created_at + 30 * 86_400)
    expect((await openai.files.retrieve(file.id)).bytes).toBe(Buffer.byteLength(jsonl(lines)))

    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/chat/completions",
      completion_window: "24h",
      metadata: { job: "nightly" }
    })
    expect(["validating", "in_progress"]).toContain(created.status)
    expect(created.request_counts).toEqual({ total: 25, completed: 0, failed: 0 })
    const batch = await waitFor(openai, created.id, (status) => status === "completed")
    expect(batch.request_counts).toEqual({ total: 25, completed: 24, failed: 1 })
    expect(batch.metadata).toEqual({ job: "nightly" })
    expect(batch.in_progress_at).not.toBeNull()
    expect(batch.finalizing_at).not.toBeNull()
    expect(batch.output_file_id).not.toBeNull()
    expect(batch.error_file_id).not.toBeNull()

    const output = await fileLines(openai, batch.output_file_id as string)
    expect(output.map((line) => line.custom_id)).toEqual(lines.slice(0, 24).map((line) => line.custom_id))
    const charges = await usageRows(gateway.url, customer.key)
    const ledger = await ledgerOf(customer.accountId)
    let total = 0n
    for (const [index, line] of output.entries()) {
      expect(line.response.status_code).toBe(200)
      expect(line.error).toBeNull()
      const body = line.response.body
      expect(body.object).toBe("chat.completion")
      expect(body.model).toBe(models[index % 3])
      const prices = BATCH_PRICES[body.model] as { input: bigint; output: bigint }
      const expected =
        ceilPerMillion(body.usage.prompt_tokens, prices.input) +
        ceilPerMillion(body.usage.completion_tokens, prices.output)
      expect(expected).toBeGreaterThan(0n)
      const charge = charges.find((c) => c.requestId === line.response.request_id)
      expect(charge).toMatchObject({ status: "settled", model: body.model })
      expect(micros(charge?.cost ?? "")).toBe(expected)
      const hold = ledger.find((entry) => entry.type === "HoldPlaced" && entry.requestId === line.response.request_id)
      const recalculated = ledger.filter((entry) => entry.type === "UsageRecalculated" && entry.holdId === hold?.holdId)
      expect(recalculated).toHaveLength(1)
      expect(micros(String(recalculated[0]?.data.captured))).toBe(expected)
      total += expected
    }
    const errors = (await (await openai.files.content(batch.error_file_id as string)).text()).trim().split("\n")
    expect(errors).toHaveLength(1)
    const failed = JSON.parse(errors[0] as string)
    expect(failed.custom_id).toBe("req-broken")
    expect(failed.response.status_code).toBeGreaterThanOrEqual(500)
    expect(failed.error.message).toBeTruthy()
    const refund = charges.find((c) => c.requestId === failed.response.request_id)
    expect(refund).toMatchObject({ status: "released", cost: "0.000000" })

    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    expect(micros(balance.captured)).toBe(total)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(25)

    // Another account's key sees none of it.
    const other = client((await admin.customer()).key)
    await expect(other.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 })
    await expect(other.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 })
    await expect(other.files.content(batch.output_file_id as string)).rejects.toMatchObject({ status: 404 })

    const files = await openai.files.list()
    expect(files.data.map((f) => f.id)).toEqual(
      expect.arrayContaining([file.id, batch.output_file_id, batch.error_file_id])
    )
    expect((await openai.files.delete(file.id)).deleted).toBe(true)
    await expect(openai.files.retrieve(file.id)).rejects.toMatchObject({ status: 404 })
  }, 30_000)

  it("runs embeddings lines at half the input price, output and usage agreeing line by line", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const openai = client(customer.key)
    const inputs: ReadonlyArray<string | ReadonlyArray<string>> = ["one", ["two", "three"], "four five six", ["seven"]]
    const lines = inputs.map((input, i) => ({
      custom_id: `emb-${i}`,
      method: "POST",
      url: "/v1/embeddings",
      body: { model: "sim-embedding", input, encoding_format: "float" }
    }))
    const file = await openai.files.create({
      file: await toFile(Buffer.from(jsonl(lines)), "emb.jsonl"),
      purpose: "batch"
    })
    // A chat model on the embeddings endpoint is refused at submit, as the endpoint refuses it.
    const chatLine = { ...(lines[0] as object), body: { model: "sim-openai", input: "x" } }
    const wrong = await openai.files.create({
      file: await toFile(Buffer.from(jsonl([chatLine])), "w.jsonl"),
      purpose: "batch"
    })
    await expect(
      openai.batches.create({ input_file_id: wrong.id, endpoint: "/v1/embeddings", completion_window: "24h" })
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("line 1: body.model") })

    const created = await openai.batches.create({
      input_file_id: file.id,
      endpoint: "/v1/embeddings",
      completion_window: "24h",
      output_expires_after: { anchor: "created_at", seconds: 7_200 }
    })
    const batch = await waitFor(openai, created.id, (status) => status === "completed")
    expect(batch.request_counts).toEqual({ total: 4, completed: 4, failed: 0 })
    // Its output file is kept the two hours the batch asked for, from when it was written.
    const written = await openai.files.retrieve(batch.output_file_id as string)
    expect(written.expires_at).toBe(written.created_at + 7_200)
    await expect(
      openai.batches.create({
        input_file_id: file.id,
        endpoint: "/v1/embeddings",
        completion_window: "24h",
        output_expires_after: { anchor: "created_at", seconds: 9_999_999 }
      })
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("output_expires_after.seconds") })
    const output = await fileLines(openai, batch.output_file_id as string)
    const charges = await usageRows(gateway.url, customer.key)
    let total = 0n
    for (const [index, line] of output.entries()) {
      const input = inputs[index] as string | ReadonlyArray<string>
      expect(line.custom_id).toBe(`emb-${index}`)
      expect(line.response.body.object).toBe("list")
      expect(line.response.body.data).toHaveLength(typeof input === "string" ? 1 : input.length)
      expect(Array.isArray(line.response.body.data[0].embedding)).toBe(true)
      // USD 0.02 per 1M interactive: 0.01 in a batch.
      const expected = ceilPerMillion(line.response.body.usage.prompt_tokens, 10_000n)
      const charge = charges.find((c) => c.requestId === line.response.request_id)
      expect(charge?.status).toBe("settled")
      expect(micros(charge?.cost ?? "")).toBe(expected)
      total += expected
    }
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    expect(micros(balance.captured)).toBe(total)
  }, 30_000)

  it("runs Responses lines as /v1/responses answers them, not stored, billed at batch prices line by line", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const openai = client(customer.key)
    const line = (customId: string, body: Record<string, unknown>) => ({
      custom_id: customId,
      method: "POST",
      url: "/v1/responses",
      body: { max_output_tokens: 64, ...body }
    })
    const models = ["sim-openai", "sim-anthropic", "sim-gemini"]
    const lines = models.map((model, i) =>
      line(`resp-${i}`, { model, input: `Say something short about ${i}.`, instructions: "Be brief.", store: true })
    )
    const upload = async (rows: ReadonlyArray<unknown>) =>
      openai.files.create({ file: await toFile(Buffer.from(jsonl(rows)), "resp.jsonl"), purpose: "batch" })
    const submit = async (rows: ReadonlyArray<unknown>) =>
      openai.batches.create({
        input_file_id: (await upload(rows)).id,
        endpoint: "/v1/responses",
        completion_window: "24h"
      })
    // Checked as POST /v1/responses checks its body, the first problem naming the file line and the field.
    const first = lines[0] as object
    await expect(submit([first, line("b", { model: "sim-openai" })])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("line 2: body.input: Missing required parameter")
    })
    await expect(submit([first, line("b", { model: "sim-openai", input: "x", temperature: 9 })])).rejects.toMatchObject(
      {
        status: 400,
        message: expect.stringContaining("line 2: body.temperature")
      }
    )
    await expect(
      submit([first, line("b", { model: "sim-openai", input: "x", background: true })])
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("line 2: body.background")
    })
    await expect(
      submit([line("a", { model: "sim-openai", input: "x", previous_response_id: "resp_nope" })])
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("line 1: body.previous_response_id") })
    expect((await ledgerOf(customer.accountId)).filter((entry) => entry.type === "HoldPlaced")).toHaveLength(0)

    const created = await submit(lines)
    expect(created.endpoint).toBe("/v1/responses")
    const batch = await waitFor(openai, created.id, (status) => status === "completed")
    expect(batch.request_counts).toEqual({ total: 3, completed: 3, failed: 0 })
    const output = await fileLines(openai, batch.output_file_id as string)
    const charges = await usageRows(gateway.url, customer.key)
    const ledger = await ledgerOf(customer.accountId)
    let total = 0n
    for (const [index, row] of output.entries()) {
      expect(row.custom_id).toBe(`resp-${index}`)
      expect(row.response.status_code).toBe(200)
      const body = row.response.body
      expect(body).toMatchObject({ object: "response", status: "completed", model: models[index], store: false })
      expect(body.id).toMatch(/^resp_/)
      expect(body.instructions).toBe("Be brief.")
      expect(body.output.some((item: { type: string }) => item.type === "message")).toBe(true)
      const prices = BATCH_PRICES[body.model] as { input: bigint; output: bigint }
      const expected =
        ceilPerMillion(body.usage.input_tokens, prices.input) + ceilPerMillion(body.usage.output_tokens, prices.output)
      expect(expected).toBeGreaterThan(0n)
      const charge = charges.find((c) => c.requestId === row.response.request_id)
      expect(charge).toMatchObject({ status: "settled", model: body.model })
      expect(micros(charge?.cost ?? "")).toBe(expected)
      const hold = ledger.find((entry) => entry.type === "HoldPlaced" && entry.requestId === row.response.request_id)
      const settled = ledger.filter((entry) => entry.type === "UsageRecalculated" && entry.holdId === hold?.holdId)
      expect(settled.map((entry) => micros(String(entry.data.captured)))).toEqual([expected])
      total += expected
      // Not stored: no later call can retrieve it.
      await expect(openai.responses.retrieve(body.id)).rejects.toMatchObject({ status: 404 })
    }
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    expect(micros(balance.captured)).toBe(total)
  }, 30_000)

  it("refuses an invalid file naming the line and field, and holds nothing", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const openai = client(customer.key)
    const bad = async (lines: ReadonlyArray<unknown>) => {
      const file = await openai.files.create({
        file: await toFile(Buffer.from(jsonl(lines)), "bad.jsonl"),
        purpose: "batch"
      })
      return openai.batches.create({
        input_file_id: file.id,
        endpoint: "/v1/chat/completions",
        completion_window: "24h"
      })
    }
    const good = request("a", "sim-openai", "hello")
    await expect(bad([good, request("b", "no-such-model", "hi")])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("line 2: body.model")
    })
    await expect(bad([good, good])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("line 2: custom_id")
    })
    await expect(bad([good, { ...good, custom_id: "c", url: "/v1/embeddings" }])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("line 2: url")
    })
    await expect(bad([good, request("d", "sim-openai", "hi", { messages: "not a list" })])).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("line 2: body.messages")
    })
    // Uploads that are not batch JSONL text.
    await expect(
      openai.files.create({ file: await toFile(Buffer.from([0xff, 0xfe, 0x00]), "bin.jsonl"), purpose: "batch" })
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("UTF-8") })
    await expect(
      openai.files.create({ file: await toFile(Buffer.from(jsonl([good])), "ft.jsonl"), purpose: "fine-tune" })
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("purpose") })
    await expect(
      openai.batches.create({ input_file_id: "file-nope", endpoint: "/v1/chat/completions", completion_window: "24h" })
    ).rejects.toMatchObject({ status: 404 })
    const own = await openai.files.create({
      file: await toFile(Buffer.from(jsonl([good])), "hour.jsonl"),
      purpose: "batch",
      expires_after: { anchor: "created_at", seconds: 3_600 }
    })
    expect(own.expires_at).toBe(own.created_at + 3_600)
    await expect(
      openai.files.create({
        file: await toFile(Buffer.from(jsonl([good])), "minute.jsonl"),
        purpose: "batch",
        expires_after: { anchor: "created_at", seconds: 60 }
      })
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("expires_after.seconds") })
    const ledger = await ledgerOf(customer.accountId)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(0)
    expect((await openai.batches.list()).data).toHaveLength(0)
  }, 30_000)

  it("stops a batch whose key is revoked: run lines billed, the rest never held", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const openai = client(customer.key)
    const lines = Array.from({ length: 40 }, (_, i) => request(`rev-${i}`, "slow-model", `Line ${i}.`))
    const created = await submitBatch(openai, lines)
    for (let i = 0; i < 100; i++) {
      if (((await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0) > 0) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect((await admin.call("DELETE", `/admin/keys/${customer.keyId}`)).status).toBe(200)
    // The key no longer reads its batch: the ledger and the files (through another key of the account) do.
    const reader = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, { name: "reader" })
    const other = client(reader.body.key)
    const batch = await waitFor(other, created.id, (status) => status === "failed")
    expect(batch.errors?.data?.[0]?.message).toContain("revoked")
    const counts = batch.request_counts as { total: number; completed: number; failed: number }
    expect(counts.completed).toBeGreaterThan(0)
    expect(counts.completed).toBeLessThan(40)
    const output = (await (await other.files.content(batch.output_file_id as string)).text()).trim().split("\n")
    expect(output).toHaveLength(counts.completed)
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    const ledger = await ledgerOf(customer.accountId)
    const captured = ledger
      .filter((entry) => entry.type === "UsageRecalculated")
      .reduce((sum, entry) => sum + micros(String(entry.data.captured)), 0n)
    expect(micros(balance.captured)).toBe(captured)
  }, 30_000)

  it("cancels: lines already answered stay billed, the rest is never held, nothing stays held", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const openai = client(customer.key)
    const lines = Array.from({ length: 40 }, (_, i) => request(`slow-${i}`, "slow-model", `Line ${i}.`))
    const created = await submitBatch(openai, lines)
    await waitFor(openai, created.id, () => true)
    for (let i = 0; i < 100; i++) {
      if (((await openai.batches.retrieve(created.id)).request_counts?.completed ?? 0) > 0) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const cancelling = await openai.batches.cancel(created.id)
    expect(["cancelling", "cancelled"]).toContain(cancelling.status)
    const batch = await waitFor(openai, created.id, (status) => status === "cancelled")
    const counts = batch.request_counts as { total: number; completed: number; failed: number }
    expect(counts.total).toBe(40)
    expect(counts.completed).toBeGreaterThan(0)
    expect(counts.completed).toBeLessThan(40)
    const output = (await (await openai.files.content(batch.output_file_id as string)).text()).trim().split("\n")
    expect(output).toHaveLength(counts.completed)
    const ledger = await ledgerOf(customer.accountId)
    const captured = ledger
      .filter((entry) => entry.type === "UsageRecalculated")
      .reduce((sum, entry) => sum + micros(String(entry.data.captured)), 0n)
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    expect(micros(balance.captured)).toBe(captured)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced").length).toBeLessThan(40)
    await expect(openai.batches.cancel(created.id)).rejects.toMatchObject({ status: 409 })
    const page = await openai.batches.list({ limit: 1 })
    expect(page.data.map((b) => b.id)).toEqual([created.id])
    expect(page.has_more).toBe(false)
  }, 30_000)

  it("shows each model's batch prices in /v1/models and /admin/models, as the lines are billed", async () => {
    const customer = await admin.customer()
    const listed = await client(customer.key).models.list()
    const shown = (id: string) => listed.data.find((m) => m.id === id) as unknown as Record<string, unknown>
    // Explicit batch keys replace input and output; they are not interactive prices.
    expect(shown("sim-anthropic")).toMatchObject({
      object: "model",
      pricing: { input: "0.150000", output: "0.600000" },
      batch_pricing: { input: "0.100000", output: "0.400000" }
    })
    expect(shown("sim-openai").batch_pricing).toEqual({ input: "0.075000", output: "0.300000" })
    expect(shown("sim-embedding").batch_pricing).toEqual({ input: "0.010000" })
    for (const [model, prices] of Object.entries(BATCH_PRICES)) {
      expect(shown(model).batch_pricing).toEqual({
        input: formatMicros(prices.input),
        output: formatMicros(prices.output)
      })
    }
    const catalog = await admin.call("GET", "/admin/models")
    const entry = (catalog.body.data as ReadonlyArray<Record<string, unknown>>).find((m) => m.id === "sim-anthropic")
    expect(entry).toMatchObject({
      pricing: { input: "0.150000", output: "0.600000", batchInput: "0.100000", batchOutput: "0.400000" },
      batchPricing: { input: "0.100000", output: "0.400000" }
    })
  }, 30_000)

  it("replays: the batches rebuilt from their events match the live read model", async () => {
    const replay = await admin.call("POST", "/admin/replay")
    expect(replay.status).toBe(200)
    expect(replay.body.ok, JSON.stringify(replay.body)).toBe(true)
    expect(JSON.stringify(replay.body)).toContain("batches")
  }, 30_000)
})
