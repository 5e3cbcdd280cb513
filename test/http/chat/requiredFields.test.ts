/**
 * The fields each text protocol requires, through the real gateway on the default catalog: a request without them is
 * a 400 in the envelope of the protocol called, worded as the vendor words it, and nothing is held or charged for it.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, closeAfterReplay, type Customer, makeAdmin } from "./ChatHarness.ts"

let gateway: TestGateway
let admin: Admin
let customer: Customer
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
  customer = await admin.customer()
}, 60_000)
afterAll(() => closeAfterReplay(gateway === undefined ? undefined : { admin, close: () => gateway.close() }))

const hello = [{ role: "user", content: "Hello" }]
const helloParts = [{ role: "user", parts: [{ text: "Hello" }] }]

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: {
      "x-api-key": customer.key,
      "x-goog-api-key": customer.key,
      authorization: `Bearer ${customer.key}`,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json"
    },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })
  return { status: response.status, body: await response.json() }
}

/** Nothing reached the ledger past the deposit: every refusal here costs nothing and holds nothing. */
const assertNothingHeld = async () => {
  const types = (await admin.ledger(customer.accountId)).map((entry) => entry.type)
  assert.deepStrictEqual(types, ["AccountOpened", "FundsDeposited"])
}

describe("POST /v1/messages", () => {
  it("without max_tokens is Anthropic's 400 'max_tokens: Field required', streaming or not", async () => {
    for (const stream of [false, true]) {
      const answer = await post("/v1/messages", { model: "sim-anthropic", messages: hello, stream })
      assert.strictEqual(answer.status, 400)
      assert.strictEqual(answer.body.type, "error")
      assert.deepStrictEqual(answer.body.error, {
        type: "invalid_request_error",
        message: "max_tokens: Field required"
      })
    }
    // Whatever the model's upstream protocol: the rule belongs to the protocol called.
    const openaiModel = await post("/v1/messages", { model: "sim-openai", messages: hello })
    assert.strictEqual(openaiModel.status, 400)
    assert.strictEqual(openaiModel.body.error.message, "max_tokens: Field required")
    await assertNothingHeld()
  })

  it("without messages, or with none, is a 400 in Anthropic's envelope", async () => {
    const missing = await post("/v1/messages", { model: "sim-anthropic", max_tokens: 16 })
    assert.strictEqual(missing.status, 400)
    assert.deepStrictEqual(missing.body.error, { type: "invalid_request_error", message: "messages: Field required" })
    const empty = await post("/v1/messages", { model: "sim-anthropic", max_tokens: 16, messages: [] })
    assert.strictEqual(empty.status, 400)
    assert.strictEqual(empty.body.type, "error")
    assert.strictEqual(empty.body.error.type, "invalid_request_error")
    assert.match(empty.body.error.message, /^messages: /)
    await assertNothingHeld()
  })
})

describe("POST /v1/messages/count_tokens", () => {
  it("needs messages but not max_tokens", async () => {
    const counted = await post("/v1/messages/count_tokens", { model: "sim-anthropic", messages: hello })
    assert.strictEqual(counted.status, 200)
    assert.isAbove(counted.body.input_tokens, 0)
    const missing = await post("/v1/messages/count_tokens", { model: "sim-anthropic" })
    assert.strictEqual(missing.status, 400)
    assert.deepStrictEqual(missing.body.error, { type: "invalid_request_error", message: "messages: Field required" })
    const empty = await post("/v1/messages/count_tokens", { model: "sim-anthropic", messages: [] })
    assert.strictEqual(empty.status, 400)
    assert.strictEqual(empty.body.error.type, "invalid_request_error")
  })
})

describe("POST /v1beta/models/{model}:generateContent and :streamGenerateContent", () => {
  it("without contents, with none, or with an empty body is a 400 in Google's envelope, unbilled", async () => {
    for (const method of ["generateContent", "streamGenerateContent?alt=sse"]) {
      for (const model of ["sim-gemini", "sim-openai", "imgchat-2.5-flash-image"]) {
        for (const body of [{}, { contents: [] }, { generationConfig: { temperature: 0.2 } }, ""]) {
          const answer = await post(`/v1beta/models/${model}:${method}`, body)
          const what = `${model}:${method} ${JSON.stringify(body)}`
          assert.strictEqual(answer.status, 400, what)
          assert.deepStrictEqual(Object.keys(answer.body), ["error"], what)
          assert.strictEqual(answer.body.error.code, 400, what)
          assert.strictEqual(answer.body.error.status, "INVALID_ARGUMENT", what)
          assert.isString(answer.body.error.message, what)
        }
      }
    }
    const empty = await post("/v1beta/models/sim-gemini:generateContent", { contents: [] })
    assert.match(empty.body.error.message, /contents/)
    await assertNothingHeld()
    const served = await post("/v1beta/models/sim-gemini:generateContent", { contents: helloParts })
    assert.strictEqual(served.status, 200)
  })
})

describe("POST /v1/chat/completions", () => {
  it("without messages, or with none, is OpenAI's 400 naming messages", async () => {
    const missing = await post("/v1/chat/completions", { model: "sim-openai" })
    assert.strictEqual(missing.status, 400)
    assert.strictEqual(missing.body.error.param, "messages")
    assert.strictEqual(missing.body.error.type, "invalid_request_error")
    const empty = await post("/v1/chat/completions", { model: "sim-openai", messages: [] })
    assert.strictEqual(empty.status, 400)
    assert.strictEqual(empty.body.error.param, "messages")
  })
})
