/**
 * The proof that a new kind needs no change to Tollgate: an operator config lists this module and an upstream (the
 * simulator here), and the real gateway serves `POST /v1/rerank` with its key check, model list, hold, settlement per
 * search unit, errors in OpenAI's envelope, metrics and catalog — next to the echo example, a chat plugin.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { type LedgerEntry, makeAdmin } from "../http/chat/ChatHarness.ts"
import { formatMicros } from "../../src/domain/Money.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"
import { type RerankSimulator, startRerankSimulator } from "../../examples/plugin-rerank/simulator.ts"

const RERANK_MODULE = resolve(import.meta.dirname, "../../examples/plugin-rerank/index.ts")
const ECHO_MODULE = resolve(import.meta.dirname, "../../examples/plugin-echo/index.ts")

/** 0.002 USD per search unit, in micro-dollars. */
const PER_UNIT = 2_000n

const config = (simulatorUrl: string) => `
upstreams:
  rerank-sim: { protocol: openai, baseUrl: "${simulatorUrl}", apiKey: "sim-rerank-key" }
  nowhere: { protocol: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: "not-used" }
models:
  - { id: rerank-1, plugin: rerank, upstreams: [rerank-sim], pricing: { perSearchUnit: "0.002" } }
  - { id: rerank-busy, plugin: rerank, upstreams: [rerank-sim], pricing: { perSearchUnit: "0.002" } }
  - { id: rerank-fallback, plugin: rerank, upstreamModel: rerank-1, upstreams: [nowhere, rerank-sim], pricing: { perSearchUnit: "0.002" } }
  - { id: echo-1, plugin: echo, upstreams: [nowhere], pricing: { perCall: "0.001" } }
plugins: ["${RERANK_MODULE}", "${ECHO_MODULE}"]
`

let dir: string
let simulator: RerankSimulator
let gateway: TestGateway
let accountId: string
let apiKey: string
let echoOnlyKey: string

/** An admin call that must succeed, its JSON answer. */
const admin = async (method: string, path: string, body?: unknown) => {
  const answer = await makeAdmin(gateway).call(method, path, body)
  assert.isTrue(answer.status >= 200 && answer.status < 300, `${method} ${path}: HTTP ${answer.status}`)
  return answer.body as Record<string, unknown>
}

const rerank = (body: unknown, key: string | null = apiKey) =>
  fetch(`${gateway.url}/v1/rerank`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify(body)
  })

const ledgerOf = (requestId: string | null): Promise<ReadonlyArray<LedgerEntry>> =>
  makeAdmin(gateway).request(accountId, requestId)

const available = async (): Promise<string> => (await makeAdmin(gateway).balance(accountId)).available

beforeAll(async () => {
  simulator = await startRerankSimulator()
  dir = mkdtempSync(join(tmpdir(), "tollgate-rerank-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, config(simulator.url))
  gateway = await startTestGateway({ configPath })
  accountId = (await admin("POST", "/admin/accounts", { name: "rerank-customer" })).id as string
  await admin("POST", `/admin/accounts/${accountId}/deposits`, { amount: "10", reference: "rerank-topup" })
  apiKey = (await admin("POST", `/admin/accounts/${accountId}/keys`, { name: "all" })).key as string
  echoOnlyKey = (await admin("POST", `/admin/accounts/${accountId}/keys`, { name: "echo", models: ["echo-1"] }))
    .key as string
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  await simulator?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("a new kind from the operator config alone (examples/plugin-rerank)", () => {
  it("ranks the documents, answers in the rerank shape, and bills the hold of its search units exactly", async () => {
    const before = await available()
    const response = await rerank({
      model: "rerank-1",
      query: "deep blue sea",
      documents: ["a red car", "the deep blue sea", { text: "blue skies" }],
      top_n: 2,
      return_documents: true
    })
    assert.strictEqual(response.status, 200)
    const body = (await response.json()) as {
      model: string
      results: ReadonlyArray<{ index: number; relevance_score: number; document?: { text: string } }>
      usage: { search_units: number }
    }
    assert.strictEqual(body.model, "rerank-1")
    assert.deepStrictEqual(
      body.results.map((result) => [result.index, result.document?.text]),
      [
        [1, "the deep blue sea"],
        [2, "blue skies"]
      ]
    )
    assert.strictEqual(body.usage.search_units, 1)
    assert.strictEqual(simulator.received.at(-1)?.model, "rerank-1", "the upstream model is sent")

    const entries = await ledgerOf(response.headers.get("x-request-id"))
    assert.deepStrictEqual(
      entries.map((entry) => entry.type),
      ["HoldPlaced", "UsageRecalculated"],
      "a call that uses its whole hold has nothing to refund"
    )
    assert.strictEqual(entries[0]?.amount, formatMicros(PER_UNIT))
    assert.strictEqual(entries[0]?.model, "rerank-1")
    assert.strictEqual(entries[0]?.data.plugin, "rerank")
    assert.strictEqual(entries[1]?.data.cost, formatMicros(PER_UNIT))
    assert.deepStrictEqual(entries[1]?.data.usage, { searchUnits: 1, documents: 3 })
    assert.strictEqual(await available(), formatMicros(BigInt(Math.round(Number(before) * 1e6)) - PER_UNIT))
  })

  it("counts a search unit per started 100 documents, and a long document once per 2,000 characters", async () => {
    const documents = [...Array.from({ length: 150 }, (_, i) => `document ${i}`), "x".repeat(4_001)]
    const response = await rerank({ model: "rerank-1", query: "document 7", documents })
    assert.strictEqual(response.status, 200)
    // 150 short documents + one of 3 chunks = 153 → 2 units.
    assert.strictEqual(((await response.json()) as { usage: { search_units: number } }).usage.search_units, 2)
    const entries = await ledgerOf(response.headers.get("x-request-id"))
    assert.strictEqual(entries[0]?.amount, formatMicros(2n * PER_UNIT))
    assert.strictEqual(entries[1]?.data.cost, formatMicros(2n * PER_UNIT))
  })

  it("answers a malformed body with a 400 naming the field, in OpenAI's envelope, and holds nothing", async () => {
    const before = await available()
    for (const [body, param] of [
      [{ model: "rerank-1", documents: ["a"] }, "query"],
      [{ model: "rerank-1", query: "q", documents: [] }, "documents"],
      [{ model: "rerank-1", query: "q", documents: ["a"], top_n: 0 }, "top_n"],
      [{ query: "q", documents: ["a"] }, "model"]
    ] as const) {
      const response = await rerank(body)
      assert.strictEqual(response.status, 400, JSON.stringify(body))
      const error = ((await response.json()) as { error: { type: string; param: string | null } }).error
      assert.strictEqual(error.type, "invalid_request_error")
      assert.strictEqual(error.param, param)
    }
    assert.strictEqual(await available(), before)
  })

  it("refuses a missing key (401), an unknown model (404), a model off the key's list (403)", async () => {
    assert.strictEqual((await rerank({ model: "rerank-1", query: "q", documents: ["a"] }, null)).status, 401)
    assert.strictEqual((await rerank({ model: "rerank-9", query: "q", documents: ["a"] })).status, 404)
    assert.strictEqual((await rerank({ model: "rerank-1", query: "q", documents: ["a"] }, echoOnlyKey)).status, 403)
  })

  it("tells a client that calls the wrong endpoint which one serves the model, both ways", async () => {
    const onRerank = await rerank({ model: "echo-1", query: "q", documents: ["a"] })
    assert.strictEqual(onRerank.status, 400)
    assert.include(((await onRerank.json()) as { error: { message: string } }).error.message, "/v1/chat/completions")
    const onChat = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model: "rerank-1", messages: [{ role: "user", content: "hi" }] })
    })
    assert.strictEqual(onChat.status, 400)
    assert.include(((await onChat.json()) as { error: { message: string } }).error.message, "POST /v1/rerank")
  })

  it("releases the whole hold when the upstream fails, and hands over to the next upstream when one is down", async () => {
    const before = await available()
    const busy = await rerank({ model: "rerank-busy", query: "q", documents: ["a"] })
    assert.strictEqual(busy.status, 503)
    const entries = await ledgerOf(busy.headers.get("x-request-id"))
    assert.deepStrictEqual(
      entries.map((entry) => entry.type),
      ["HoldPlaced", "RefundIssued"]
    )
    assert.strictEqual(entries[1]?.amount, entries[0]?.amount, "the whole hold goes back")
    assert.strictEqual(await available(), before)
    const fallback = await rerank({ model: "rerank-fallback", query: "q", documents: ["q"] })
    assert.strictEqual(fallback.status, 200)
  })

  it("is listed in /v1/models and /admin/models with its kind, endpoint and price", async () => {
    const listed = (await (
      await fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${apiKey}` } })
    ).json()) as { data: ReadonlyArray<{ id: string }> }
    assert.includeMembers(
      listed.data.map((model) => model.id),
      ["rerank-1", "echo-1"]
    )
    const models = (await admin("GET", "/admin/models")) as {
      data: ReadonlyArray<{ id: string; kind: string; endpoint: string; plugin: string; pricing: object }>
    }
    const entry = models.data.find((model) => model.id === "rerank-1")
    assert.deepStrictEqual(entry && [entry.kind, entry.endpoint, entry.plugin, entry.pricing], [
      "rerank",
      "/v1/rerank",
      "rerank",
      { perSearchUnit: "0.002000" }
    ])
  })

  it("shows up in the request metrics under its own route", async () => {
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
    assert.match(metrics, /route="\/v1\/rerank"/)
  })
})
