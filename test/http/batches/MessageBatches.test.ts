/**
 * Anthropic's Message Batches end to end with the official `@anthropic-ai/sdk` (messages.batches.create, retrieve,
 * results, cancel, list, delete) against the real gateway on PGlite, with requests on three vendors' simulators (and one that
 * always fails). The results, the ledger and the usage report must agree request by request at batch prices.
 */
import Anthropic from "@anthropic-ai/sdk"
import OpenAI from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TestGateway } from "../../support/TestGateway.ts"
import type { Admin } from "../chat/ChatHarness.ts"
import { BATCH_PRICES, type BatchGateway, ceilPerMillion, micros, startBatchGateway } from "./BatchHarness.ts"
import { usageRows } from "./SdkBatches.ts"

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

const client = (key: string) => new Anthropic({ apiKey: key, baseURL: gateway.url, maxRetries: 0 })

const request = (customId: string, model: string, text: string) => ({
  custom_id: customId,
  params: { model, max_tokens: 64, messages: [{ role: "user" as const, content: text }] }
})

const waitEnded = async (anthropic: Anthropic, id: string) => {
  for (let i = 0; i < 200; i++) {
    const batch = await anthropic.messages.batches.retrieve(id)
    if (batch.processing_status === "ended") return batch
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`message batch ${id} did not end`)
}

const resultsOf = async (anthropic: Anthropic, id: string) => {
  const all: Array<Anthropic.Messages.Batches.MessageBatchIndividualResponse> = []
  for await (const line of await anthropic.messages.batches.results(id)) all.push(line)
  return all
}

const capturedIn = (ledger: ReadonlyArray<{ type: string; data: Record<string, unknown> }>) =>
  ledger
    .filter((entry) => entry.type === "UsageRecalculated")
    .reduce((sum, entry) => sum + micros(String(entry.data.captured)), 0n)

describe("message batches on the Anthropic surface", () => {
  it("runs every request on its vendor at batch prices; results, ledger and usage agree", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const anthropic = client(customer.key)
    const models = ["sim-openai", "sim-anthropic", "sim-gemini"]
    const requests = [
      ...Array.from({ length: 9 }, (_, i) => request(`req-${i}`, models[i % 3] as string, `Tell me about ${i}.`)),
      request("req-broken", "broken-model", "This upstream always fails.")
    ]
    const created = await anthropic.messages.batches.create({ requests })
    expect(created).toMatchObject({ type: "message_batch", processing_status: "in_progress", results_url: null })
    expect(created.id).toMatch(/^msgbatch_/)
    expect(created.request_counts).toEqual({ processing: 10, succeeded: 0, errored: 0, canceled: 0, expired: 0 })
    await expect(anthropic.messages.batches.results(created.id)).rejects.toThrow(/results_url/)

    const batch = await waitEnded(anthropic, created.id)
    expect(batch.request_counts).toEqual({ processing: 0, succeeded: 9, errored: 1, canceled: 0, expired: 0 })
    expect(batch.ended_at).not.toBeNull()
    expect(batch.cancel_initiated_at).toBeNull()
    expect(batch.results_url).toBe(`${gateway.url}/v1/messages/batches/${batch.id}/results`)

    const results = await resultsOf(anthropic, batch.id)
    expect(results.map((line) => line.custom_id)).toEqual(requests.map((r) => r.custom_id))
    const charges = await usageRows(gateway.url, customer.key)
    const ledger = await admin.ledger(customer.accountId)
    let total = 0n
    for (const [index, line] of results.slice(0, 9).entries()) {
      if (line.result.type !== "succeeded") throw new Error(`request ${index}: ${JSON.stringify(line.result)}`)
      const message = line.result.message
      expect(message.type).toBe("message")
      expect(message.role).toBe("assistant")
      expect(message.model).toBe(models[index % 3])
      expect(message.content[0]?.type).toBe("text")
      const prices = BATCH_PRICES[message.model] as { input: bigint; output: bigint }
      const expected =
        ceilPerMillion(message.usage.input_tokens, prices.input) +
        ceilPerMillion(message.usage.output_tokens, prices.output)
      expect(expected).toBeGreaterThan(0n)
      const requestId = `${batch.id}/${index}`
      const charge = charges.find((c) => c.requestId === requestId)
      expect(charge).toMatchObject({ status: "settled", model: message.model })
      expect(micros(charge?.cost ?? "")).toBe(expected)
      const hold = ledger.find((entry) => entry.type === "HoldPlaced" && entry.requestId === requestId)
      const settled = ledger.filter((entry) => entry.type === "UsageRecalculated" && entry.holdId === hold?.holdId)
      expect(settled).toHaveLength(1)
      expect(micros(String(settled[0]?.data.captured))).toBe(expected)
      total += expected
    }
    const failed = results[9]?.result
    if (failed?.type !== "errored") throw new Error(`the broken request: ${JSON.stringify(failed)}`)
    expect(failed.error.type).toBe("error")
    expect(failed.error.error.type).toBe("api_error")
    expect(failed.error.error.message).toBeTruthy()
    expect(charges.find((c) => c.requestId === `${batch.id}/9`)).toMatchObject({
      status: "released",
      cost: "0.000000"
    })
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    expect(micros(balance.captured)).toBe(total)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(10)

    // Another account's key sees none of it; an ended batch cannot be cancelled.
    const other = client((await admin.customer()).key)
    await expect(other.messages.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 })
    await expect(other.messages.batches.results(batch.id)).rejects.toMatchObject({ status: 404 })
    await expect(anthropic.messages.batches.cancel(batch.id)).rejects.toMatchObject({ status: 409 })
    // The OpenAI surface does not show it.
    const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    await expect(openai.batches.retrieve(batch.id)).rejects.toMatchObject({ status: 404 })
  }, 30_000)

  it("refuses an invalid request naming its index, custom_id and field, and holds nothing", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const anthropic = client(customer.key)
    const good = [request("a", "sim-openai", "hi"), request("b", "sim-anthropic", "hi")]
    const refusals: ReadonlyArray<[Array<unknown>, RegExp, string]> = [
      [
        [...good, request("c", "gpt-nope", "hi")],
        /requests\[2\] \(custom_id 'c'\): requests\.2\.params\.model/,
        "requests.2.params.model"
      ],
      [
        [...good, { custom_id: "c", params: { model: "sim-openai", max_tokens: 8, messages: "hi" } }],
        /requests\[2\]/,
        "requests.2.params.messages"
      ],
      [
        [...good, request("a", "sim-openai", "hi")],
        /requests\[2\] \(custom_id 'a'\): requests\.2\.custom_id: 'a' is used/,
        "requests.2.custom_id"
      ],
      [[request("bad id!", "sim-openai", "hi")], /requests\[0\]: requests\.0\.custom_id/, "requests.0.custom_id"],
      [
        [{ custom_id: "s", params: { ...request("s", "sim-openai", "hi").params, stream: true } }],
        /stream/,
        "requests.0.params.stream"
      ],
      [
        [...good, { custom_id: "z", params: { ...request("z", "sim-openai", "hi").params, max_tokens: 0 } }],
        /positive integer/,
        "requests.2.params.max_tokens"
      ],
      [
        [{ custom_id: "m", params: { model: "sim-openai", messages: [{ role: "user", content: "hi" }] } }],
        /Field required/,
        "requests.0.params.max_tokens"
      ],
      [[], /requests/, "requests"]
    ]
    for (const [requests, message, field] of refusals) {
      const refused = await anthropic.messages.batches
        .create({ requests: requests as Anthropic.Messages.Batches.BatchCreateParams["requests"] })
        .then(
          () => undefined,
          (error: unknown) => error
        )
      expect(refused).toBeInstanceOf(Anthropic.BadRequestError)
      const body = (refused as InstanceType<typeof Anthropic.BadRequestError>).error as {
        type: string
        error: { type: string; message: string }
      }
      expect(body.type).toBe("error")
      expect(body.error.type).toBe("invalid_request_error")
      expect(body.error.message).toMatch(message)
      expect(body.error.message).toContain(`${field}:`)
    }
    const ledger = await admin.ledger(customer.accountId)
    expect(ledger.filter((entry) => entry.type === "HoldPlaced")).toHaveLength(0)
    expect((await anthropic.messages.batches.list()).data).toHaveLength(0)
  }, 30_000)

  it("cancels: answered requests stay billed, the others are canceled and refunded, and lists page", async () => {
    const customer = await admin.customer({ deposit: "10" })
    const anthropic = client(customer.key)
    const first = await anthropic.messages.batches.create({ requests: [request("one", "sim-openai", "hi")] })
    await waitEnded(anthropic, first.id)
    const requests = Array.from({ length: 40 }, (_, i) => request(`slow-${i}`, "slow-model", `Line ${i}.`))
    const created = await anthropic.messages.batches.create({ requests })
    for (let i = 0; i < 100; i++) {
      if ((await anthropic.messages.batches.retrieve(created.id)).request_counts.succeeded > 0) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    // Deleting needs the batch ended first.
    await expect(anthropic.messages.batches.delete(created.id)).rejects.toMatchObject({ status: 409 })
    const canceling = await anthropic.messages.batches.cancel(created.id)
    expect(canceling.cancel_initiated_at).not.toBeNull()
    expect(["canceling", "ended"]).toContain(canceling.processing_status)
    const batch = await waitEnded(anthropic, created.id)
    const counts = batch.request_counts
    expect(counts.succeeded).toBeGreaterThan(0)
    expect(counts.canceled).toBeGreaterThan(0)
    expect(counts.succeeded + counts.canceled).toBe(40)
    const results = await resultsOf(anthropic, batch.id)
    expect(results.filter((line) => line.result.type === "succeeded")).toHaveLength(counts.succeeded)
    expect(results.filter((line) => line.result.type === "canceled")).toHaveLength(counts.canceled)
    const balance = await admin.balance(customer.accountId)
    expect(balance.held).toBe("0.000000")
    const ledger = await admin.ledger(customer.accountId)
    expect(micros(balance.captured)).toBe(capturedIn(ledger))
    // Every hold placed for the cancelled batch was settled or refunded; most requests were never held.
    expect(ledger.filter((entry) => entry.type === "HoldPlaced").length).toBeLessThan(41)

    // Newest first, paged both ways; the OpenAI surface lists neither the message batches nor their requests.
    const page = await anthropic.messages.batches.list({ limit: 1 })
    expect(page.data.map((b) => b.id)).toEqual([created.id])
    expect(page).toMatchObject({ has_more: true, first_id: created.id, last_id: created.id })
    const older = await anthropic.messages.batches.list({ limit: 1, after_id: created.id })
    expect(older.data.map((b) => b.id)).toEqual([first.id])
    expect(older.has_more).toBe(false)
    const newer = await anthropic.messages.batches.list({ limit: 5, before_id: first.id })
    expect(newer.data.map((b) => b.id)).toEqual([created.id])
    const openai = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
    expect((await openai.batches.list()).data).toHaveLength(0)
    // The requests are kept by the gateway, not as one of the client's files.
    expect((await openai.files.list()).data).toHaveLength(0)

    // An ended batch is deleted once, with its requests; its ledger entries stay.
    expect(await anthropic.messages.batches.delete(first.id)).toEqual({ id: first.id, type: "message_batch_deleted" })
    await expect(anthropic.messages.batches.retrieve(first.id)).rejects.toMatchObject({ status: 404 })
    await expect(anthropic.messages.batches.results(first.id)).rejects.toMatchObject({ status: 404 })
    await expect(anthropic.messages.batches.delete(first.id)).rejects.toMatchObject({ status: 404 })
    expect((await anthropic.messages.batches.list()).data.map((b) => b.id)).toEqual([created.id])
    expect(micros((await admin.balance(customer.accountId)).captured)).toBe(capturedIn(ledger))
  }, 30_000)

  it("replays: the batches rebuilt from their events match the live read model", async () => {
    const replay = await admin.call("POST", "/admin/replay")
    expect(replay.status).toBe(200)
    expect(replay.body.ok, JSON.stringify(replay.body)).toBe(true)
  }, 30_000)
})
