/**
 * `POST /v1/embeddings` when the upstream fails: a gateway whose `emb-controlled` model speaks to a simulator this suite
 * sets faults on. A 5xx (and a 429) from the upstream reaches the client as an error in OpenAI's envelope, and the
 * ledger holds exactly one hold for the tokenizer's count, refunded whole, nothing captured; the upstream's own 400 is
 * passed through as a 400 with the hold released as `rejected`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { costPerMillion } from "../../../src/domain/Money.ts"
import { formatMicros } from "../../../src/domain/Money.ts"
import { type Admin, closeAfterReplay, type Customer, makeAdmin } from "../chat/ChatHarness.ts"
import { settledLedger } from "../images/ImageHarness.ts"
import { assertOpenAiSchema, openAiSchemaErrors, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

let sim: RunningSimulator
let gateway: TestGateway
let admin: Admin
let configDir: string

const MODEL = "emb-controlled"
/** USD 13.50 per 1M input tokens: dear enough that the hold is a readable amount. */
const INPUT_PRICE = 13_500_000n

beforeAll(async () => {
  // The 3 MB spec is parsed once, up front: parsing blocks the event loop long enough to outlive a keep-alive socket.
  openAiSchemaErrors("ErrorResponse", {})
  sim = await startSimulator()
  configDir = mkdtempSync(join(tmpdir(), "tollgate-embeddings-"))
  const configPath = join(configDir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  sim: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "${sim.apiKey}", timeoutMs: 20000 }
models:
  - { id: ${MODEL}, plugin: embeddings, upstreams: [sim], upstreamModel: text-embedding-3-large, pricing: { input: "13.5" } }
`
  )
  gateway = await startTestGateway({ configPath })
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(async () => {
  await closeAfterReplay(admin === undefined ? undefined : { admin, close: () => gateway.close() }, sim)
  rmSync(configDir, { recursive: true, force: true })
})

const TEXTS = ["The quick brown fox jumps over the lazy dog.", "Tollgate bills every token it sees."]
const TOKENS = TEXTS.reduce((sum, text) => sum + countText(text), 0)
const HELD = formatMicros(costPerMillion(BigInt(TOKENS), INPUT_PRICE))

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

const post = async (key: string, body: unknown) => {
  const response = await fetch(`${gateway.url}/v1/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, body: JSON.parse(text) }
}

const failureOf = async (promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error
    throw error
  }
  return assert.fail("expected the request to fail")
}

const embeddingCalls = () => sim.calls().filter((call) => call.path === "/v1/embeddings").length

/**
 * The account's whole ledger: opened, the 10 USD deposit, one hold of {@link HELD} for the key and model, then its
 * refund in full for `reason`; nothing captured, the balance whole again.
 */
const assertReleasedInFull = async (customer: Customer, reason: string) => {
  const entries = await settledLedger(admin, customer.accountId)
  assert.deepStrictEqual(
    entries.map((e) => [e.type, e.amount]),
    [
      ["AccountOpened", null],
      ["FundsDeposited", "10.000000"],
      ["HoldPlaced", HELD],
      ["RefundIssued", HELD]
    ]
  )
  const [, , hold, refund] = entries
  assert.strictEqual(hold?.keyId, customer.keyId)
  assert.strictEqual(hold?.model, MODEL)
  assert.match(hold?.requestId ?? "", /^req_[0-9a-f]{32}$/)
  assert.strictEqual(refund?.holdId, hold?.holdId)
  assert.strictEqual(refund?.data.reason, reason)
  const balance = await admin.balance(customer.accountId)
  assert.strictEqual(balance.captured, "0.000000")
  assert.strictEqual(balance.held, "0.000000")
  assert.strictEqual(balance.available, balance.deposited)
}

skipWithoutOpenAiSpec()

describe("embeddings: upstream failures", () => {
  it("an upstream 500 reaches the SDK as a 502 server_error, the hold released in full", async () => {
    const customer = await admin.customer()
    sim.clearCalls()
    sim.setFaults({ status: 500 }, 10)
    try {
      const error = await failureOf(
        client(customer.key).embeddings.create({ model: MODEL, input: TEXTS, encoding_format: "float" })
      )
      assert.strictEqual(error.status, 502)
      assert.strictEqual(error.type, "server_error")
      assert.match(error.headers?.get("x-request-id") ?? "", /^req_/)
    } finally {
      sim.clearFaults()
    }
    assert.isAtLeast(embeddingCalls(), 1, "the upstream was called")
    await assertReleasedInFull(customer, "failed")
  })

  it("the wire body is OpenAI's ErrorResponse for an upstream 5xx and 429", async () => {
    for (const [status, expected, type] of [
      [503, 503, "service_unavailable_error"],
      [429, 429, "rate_limit_error"]
    ] as const) {
      const customer = await admin.customer()
      sim.setFaults({ status, ...(status === 429 ? { retryAfterSeconds: 2 } : {}) }, 10)
      let answer: Awaited<ReturnType<typeof post>>
      try {
        answer = await post(customer.key, { model: MODEL, input: TEXTS })
      } finally {
        sim.clearFaults()
      }
      assert.strictEqual(answer.status, expected, answer.text)
      assert.match(answer.headers.get("content-type") ?? "", /^application\/json/)
      assertOpenAiSchema("ErrorResponse", answer.body)
      assert.strictEqual(answer.body.error.type, type)
      assert.isString(answer.body.error.message)
      assert.isAbove(answer.body.error.message.length, 0)
      if (status === 429) {
        assert.strictEqual(answer.body.error.code, "rate_limit_exceeded")
        assert.strictEqual(answer.headers.get("retry-after"), "2")
      }
      await assertReleasedInFull(customer, "failed")
    }
  })

  it("the upstream's own 400 is passed through, the hold released as rejected", async () => {
    const customer = await admin.customer()
    // text-embedding-3-large takes at most 3072 dimensions; the gateway does not know that, the upstream refuses.
    const answer = await post(customer.key, { model: MODEL, input: TEXTS, dimensions: 4000 })
    assert.strictEqual(answer.status, 400, answer.text)
    assertOpenAiSchema("ErrorResponse", answer.body)
    assert.strictEqual(answer.body.error.type, "invalid_request_error")
    await assertReleasedInFull(customer, "rejected")
  })

  it("after the faults are cleared the same model embeds and charges exactly its tokens", async () => {
    const customer = await admin.customer()
    const reply = await client(customer.key).embeddings.create({ model: MODEL, input: TEXTS, encoding_format: "float" })
    assert.strictEqual(reply.usage.prompt_tokens, TOKENS)
    const entries = await settledLedger(admin, customer.accountId)
    const usage = entries.find((e) => e.type === "UsageRecalculated")
    assert.strictEqual(String(usage?.data.cost), HELD)
    assert.strictEqual((await admin.balance(customer.accountId)).captured, HELD)
  })
})
