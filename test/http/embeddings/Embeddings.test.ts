/**
 * `POST /v1/embeddings` through the official `openai` SDK on the default catalog: `sim-embedding` (OpenAI upstream)
 * and `sim-embedding-gemini` (Gemini upstream). Float and base64 (the SDK's default, decoded client-side) give the
 * same vectors; every call is billed exactly its tokens at the model's input price, the hold being the tokenizer's
 * count; refused requests hold nothing, and the wire body conforms to OpenAI's `CreateEmbeddingResponse`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { costPerMillion } from "../../../src/domain/Money.ts"
import { formatMicros } from "../../../src/domain/Money.ts"
import { simulatorConfig } from "../../../src/adapters/simulator/DefaultCatalog.ts"
import { type Admin, closeAfterReplay, type Customer, makeAdmin } from "../chat/ChatHarness.ts"
import { holdsOf } from "../images/ImageHarness.ts"
import { assertOpenAiSchema, openAiSchemaErrors, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

let gateway: TestGateway
let admin: Admin
beforeAll(async () => {
  // The 3 MB spec is parsed once, up front: parsing blocks the event loop long enough to outlive a keep-alive socket.
  openAiSchemaErrors("CreateEmbeddingResponse", {})
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(() => closeAfterReplay(admin === undefined ? undefined : { admin, close: () => gateway.close() }))

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })

/** The catalog's input price of `model` (micro-dollars per 1M tokens). */
const inputPrice = (model: string): bigint => {
  const entry = simulatorConfig("http://sim.invalid", "k").models.find((m) => m.id === model)
  assert.isDefined(entry?.pricing.input, `${model} has an input price`)
  return entry?.pricing.input as bigint
}

const priceOf = (model: string, tokens: number) => formatMicros(costPerMillion(BigInt(tokens), inputPrice(model)))

const post = async (key: string, body: unknown) => {
  const response = await fetch(`${gateway.url}/v1/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: JSON.parse(text) }
}

/** Asserts the account has exactly `tokens.length` holds, each held and charged its tokens' price, nothing left. */
const assertBilled = async (customer: Customer, model: string, tokens: ReadonlyArray<number>) => {
  const holds = await holdsOf(admin, customer.accountId)
  assert.strictEqual(holds.length, tokens.length, "one hold per call")
  holds.forEach((outcome, index) => {
    const price = priceOf(model, tokens[index] as number)
    assert.strictEqual(outcome.hold.model, model)
    assert.strictEqual(outcome.hold.keyId, customer.keyId)
    assert.strictEqual(outcome.held, price, "the hold is the tokenizer's count at the input price")
    assert.strictEqual(outcome.cost, price, "the charge is the upstream's prompt_tokens at the input price")
    assert.strictEqual(outcome.captured, price)
    assert.include([undefined, "0.000000"], outcome.refund, "nothing to give back")
  })
}

const assertUnheld = async (customer: Customer) => {
  const entries = await admin.ledger(customer.accountId)
  assert.deepStrictEqual(
    entries.filter((e) => e.type === "HoldPlaced"),
    [],
    "nothing was held"
  )
}

const TEXTS = ["The quick brown fox jumps over the lazy dog.", "Tollgate bills every token it sees."]
const tokensOf = (texts: ReadonlyArray<string>) => texts.reduce((sum, text) => sum + countText(text), 0)

skipWithoutOpenAiSpec()

describe("embeddings (openai SDK)", () => {
  for (const model of ["sim-embedding", "sim-embedding-gemini"]) {
    it(`${model}: float and the SDK's default base64 give the same vectors, each call billed its tokens`, async () => {
      const customer = await admin.customer()
      const sdk = client(customer.key)
      const floats = await sdk.embeddings.create({ model, input: TEXTS, encoding_format: "float" })
      assert.strictEqual(floats.object, "list")
      assert.strictEqual(floats.model, model)
      assert.strictEqual(floats.data.length, 2)
      floats.data.forEach((item, index) => {
        assert.strictEqual(item.object, "embedding")
        assert.strictEqual(item.index, index)
        assert.isAbove(item.embedding.length, 0)
        assert.isTrue(
          item.embedding.every((x) => typeof x === "number" && Number.isFinite(x)),
          "numbers"
        )
      })
      assert.strictEqual(floats.usage.prompt_tokens, tokensOf(TEXTS))
      assert.strictEqual(floats.usage.total_tokens, floats.usage.prompt_tokens)

      const decoded = await sdk.embeddings.create({ model, input: TEXTS })
      assert.strictEqual(decoded.data.length, 2)
      decoded.data.forEach((item, index) => {
        const expected = floats.data[index]?.embedding ?? []
        assert.strictEqual(item.embedding.length, expected.length)
        assert.isTrue(
          item.embedding.every((x) => typeof x === "number"),
          "the SDK decoded base64 to numbers"
        )
        // float32 on the wire: equal to the float answer within float32 precision.
        item.embedding.forEach((x, i) => {
          assert.closeTo(x, expected[i] as number, 1e-6)
        })
      })
      await assertBilled(customer, model, [tokensOf(TEXTS), tokensOf(TEXTS)])
    })
  }

  it("answers OpenAI's CreateEmbeddingResponse on the wire, base64 being little-endian float32", async () => {
    const customer = await admin.customer()
    const input = "measure me"
    const floats = await post(customer.key, { model: "sim-embedding", input, encoding_format: "float" })
    assert.strictEqual(floats.status, 200)
    assert.match(floats.headers.get("content-type") ?? "", /application\/json/)
    assertOpenAiSchema("CreateEmbeddingResponse", floats.body)
    const base64 = await post(customer.key, { model: "sim-embedding", input, encoding_format: "base64" })
    assert.strictEqual(base64.status, 200)
    // The spec types `embedding` as numbers only; with the base64 string in its place the rest must still conform.
    assertOpenAiSchema("CreateEmbeddingResponse", {
      ...base64.body,
      data: base64.body.data.map((item: { embedding: unknown }) => ({ ...item, embedding: [] }))
    })
    const encoded = base64.body.data[0].embedding
    assert.isString(encoded)
    const bytes = Buffer.from(encoded, "base64")
    const vector: Array<number> = floats.body.data[0].embedding
    assert.strictEqual(bytes.length, vector.length * 4)
    vector.forEach((x, i) => {
      assert.strictEqual(bytes.readFloatLE(i * 4), Math.fround(x))
    })
    await assertBilled(customer, "sim-embedding", [countText(input), countText(input)])
  })

  it("takes token arrays and dimensions", async () => {
    const customer = await admin.customer()
    const sdk = client(customer.key)
    const tokens = await sdk.embeddings.create({
      model: "sim-embedding",
      input: [
        [1, 2, 3, 4],
        [5, 6]
      ],
      encoding_format: "float"
    })
    assert.strictEqual(tokens.data.length, 2)
    assert.strictEqual(tokens.usage.prompt_tokens, 6)
    const single = await sdk.embeddings.create({ model: "sim-embedding", input: [7, 8, 9], encoding_format: "float" })
    assert.strictEqual(single.data.length, 1)
    assert.strictEqual(single.usage.prompt_tokens, 3)
    const small = await sdk.embeddings.create({ model: "sim-embedding", input: "short", dimensions: 32 })
    assert.strictEqual(small.data[0]?.embedding.length, 32)
    await assertBilled(customer, "sim-embedding", [6, 3, countText("short")])
  })

  it("refuses malformed requests with a 400 naming the field, holding nothing", async () => {
    const customer = await admin.customer()
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ model: "sim-embedding" }, "input"],
      [{ model: "sim-embedding", input: "" }, "input"],
      [{ model: "sim-embedding", input: [] }, "input"],
      [{ model: "sim-embedding", input: ["ok", ""] }, "input"],
      [{ model: "sim-embedding", input: [[]] }, "input"],
      [{ model: "sim-embedding", input: [1.5] }, "input"],
      [{ model: "sim-embedding", input: [{ text: "x" }] }, "input"],
      [{ model: "sim-embedding", input: Array.from({ length: 2049 }, () => "x") }, "input"],
      [{ model: "sim-embedding", input: "x", encoding_format: "int8" }, "encoding_format"],
      [{ model: "sim-embedding", input: "x", dimensions: 0 }, "dimensions"],
      [{ model: "sim-embedding", input: "x", dimensions: 1.5 }, "dimensions"],
      [{ model: "sim-embedding", input: "x", user: 7 }, "user"],
      [{ input: "x" }, "model"]
    ]
    for (const [body, param] of cases) {
      const answer = await post(customer.key, body)
      assert.strictEqual(answer.status, 400, JSON.stringify(body).slice(0, 80))
      assert.strictEqual(answer.body.error.param, param)
      assert.strictEqual(answer.body.error.type, "invalid_request_error")
      assertOpenAiSchema("ErrorResponse", answer.body)
    }
    await assertUnheld(customer)
  })

  it("refuses unknown models (404), models outside the key's list (403) and models of other kinds (400)", async () => {
    const customer = await admin.customer()
    const unknown = await post(customer.key, { model: "no-such-model", input: "x" })
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual(unknown.body.error.code, "model_not_found")
    const chat = await post(customer.key, { model: "sim-openai", input: "x" })
    assert.strictEqual(chat.status, 400)
    assert.include(chat.body.error.message, "/v1/chat/completions")
    const speech = await post(customer.key, { model: "sim-tts", input: "x" })
    assert.strictEqual(speech.status, 400)
    assert.include(speech.body.error.message, "/v1/audio/speech")
    const limited = await admin.customer({ models: ["sim-embedding-gemini"] })
    const denied = await post(limited.key, { model: "sim-embedding", input: "x" })
    assert.strictEqual(denied.status, 403)
    assert.strictEqual(denied.body.error.code, "model_not_allowed")
    const anonymous = await post("sk-nope", { model: "sim-embedding", input: "x" })
    assert.strictEqual(anonymous.status, 401)
    await assertUnheld(customer)
    await assertUnheld(limited)
  })

  it("refuses a call the balance cannot hold with a 402, charging nothing", async () => {
    const customer = await admin.customer({ deposit: "0" })
    const answer = await post(customer.key, { model: "sim-embedding", input: "x" })
    assert.strictEqual(answer.status, 402)
    assert.strictEqual(answer.body.error.code, "insufficient_quota")
    await assertUnheld(customer)
  })
})
