import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import { fromBase64Floats } from "../../../../src/adapters/simulator/audio/EmbeddingVectors.ts"
import { type RunningSimulator, startSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../../../../src/adapters/tokenizer/Tokenizer.ts"
import { type Body, postJson } from "./AudioHttp.ts"

let sim: RunningSimulator
beforeAll(async () => {
  sim = await startSimulator()
})
afterAll(() => sim.close())

const norm = (vector: ReadonlyArray<number>) => Math.sqrt(vector.reduce((sum, x) => sum + x * x, 0))
const embed = (body: Record<string, unknown>) =>
  postJson(sim, "/v1/embeddings", { model: "text-embedding-3-small", ...body })
const gemini = (model: string, method: string, body: unknown, key = sim.apiKey) =>
  postJson(sim, `/v1beta/models/${model}:${method}`, body, { "x-goog-api-key": key })

describe("simulator: OpenAI embeddings", () => {
  it("gives deterministic unit vectors, distinct per input, with token usage", async () => {
    const first = await embed({ input: ["the quick brown fox", "a lazy dog"] })
    const again = await embed({ input: "the quick brown fox" })
    assert.strictEqual(first.status, 200)
    assert.strictEqual(first.body.object, "list")
    assert.strictEqual(first.body.model, "text-embedding-3-small")
    const [a, b] = first.body.data as ReadonlyArray<Body>
    assert.deepStrictEqual([a.object, a.index, b.index], ["embedding", 0, 1])
    assert.strictEqual(a.embedding.length, 1536)
    assert.closeTo(norm(a.embedding), 1, 1e-5)
    assert.closeTo(norm(b.embedding), 1, 1e-5)
    assert.notDeepEqual(a.embedding, b.embedding)
    assert.deepStrictEqual(again.body.data[0].embedding, a.embedding)
    const tokens = countText("the quick brown fox") + countText("a lazy dog")
    assert.deepStrictEqual(first.body.usage, { prompt_tokens: tokens, total_tokens: tokens })
  })

  it("honours dimensions, and base64 decodes to the same float32 values", async () => {
    const floats = await embed({ input: "hello", dimensions: 64 })
    const base64 = await embed({ input: "hello", dimensions: 64, encoding_format: "base64" })
    assert.strictEqual(floats.body.data[0].embedding.length, 64)
    assert.closeTo(norm(floats.body.data[0].embedding), 1, 1e-5)
    assert.isString(base64.body.data[0].embedding)
    assert.deepStrictEqual(fromBase64Floats(base64.body.data[0].embedding), floats.body.data[0].embedding)
    const large = await postJson(sim, "/v1/embeddings", { model: "text-embedding-3-large", input: "hello" })
    assert.strictEqual(large.body.data[0].embedding.length, 3072)
    const simModel = await postJson(sim, "/v1/embeddings", { model: "sim-embed", input: "hello" })
    assert.strictEqual(simModel.body.data[0].embedding.length, 256)
  })

  it("accepts token arrays and counts their length", async () => {
    const one = await embed({ input: [1, 2, 3, 4] })
    const many = await embed({
      input: [
        [1, 2, 3],
        [5, 6]
      ]
    })
    assert.strictEqual(one.body.data.length, 1)
    assert.strictEqual(one.body.usage.prompt_tokens, 4)
    assert.strictEqual(many.body.data.length, 2)
    assert.strictEqual(many.body.usage.prompt_tokens, 5)
    assert.closeTo(norm(many.body.data[1].embedding), 1, 1e-5)
  })

  it("works with openai-node, which asks for base64 and decodes it", async () => {
    const client = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
    const reply = await client.embeddings.create({ model: "text-embedding-3-small", input: "hello", dimensions: 64 })
    const floats = await embed({ input: "hello", dimensions: 64 })
    assert.deepStrictEqual(reply.data[0]!.embedding, floats.body.data[0].embedding)
    const last = sim.calls().at(-2)
    assert.strictEqual(last?.path, "/v1/embeddings")
    assert.strictEqual((last?.body as Body | undefined)?.encoding_format, "base64")
  })

  it("rejects bad requests in OpenAI's envelope", async () => {
    for (const body of [
      { input: "" },
      { input: [] },
      { input: ["ok", ""] },
      { input: [{ text: "x" }] },
      { input: "x", dimensions: 0 },
      { input: "x", dimensions: 4000 },
      { input: "x", encoding_format: "int8" }
    ]) {
      const answer = await embed(body)
      assert.strictEqual(answer.status, 400, JSON.stringify(body))
      assert.strictEqual(answer.body.error.type, "invalid_request_error")
      assert.isString(answer.body.error.message)
    }
    const missing = await postJson(sim, "/v1/embeddings", { input: "x" })
    assert.strictEqual(missing.status, 400)
    const unauthorized = await postJson(sim, "/v1/embeddings", { model: "m", input: "x" }, {})
    assert.strictEqual(unauthorized.status, 401)
  })

  it("applies fault knobs", async () => {
    const answer = await postJson(
      sim,
      "/v1/embeddings",
      { model: "text-embedding-3-small", input: "x" },
      { authorization: `Bearer ${sim.apiKey}`, "x-sim-fault": "status=429" }
    )
    assert.strictEqual(answer.status, 429)
    assert.strictEqual(answer.body.error.code, "rate_limit_exceeded")
  })
})

describe("simulator: Gemini embeddings", () => {
  it("batchEmbedContents answers one vector per request, equal to OpenAI's for the same text and dimension", async () => {
    const answer = await gemini("gemini-embedding-001", "batchEmbedContents", {
      requests: [
        { model: "models/gemini-embedding-001", content: { parts: [{ text: "hello" }] }, outputDimensionality: 64 },
        { model: "models/gemini-embedding-001", content: { parts: [{ text: "world" }] }, taskType: "RETRIEVAL_QUERY" }
      ]
    })
    assert.strictEqual(answer.status, 200)
    assert.deepStrictEqual(Object.keys(answer.body), ["embeddings"])
    assert.strictEqual(answer.body.embeddings.length, 2)
    assert.strictEqual(answer.body.embeddings[0].values.length, 64)
    assert.strictEqual(answer.body.embeddings[1].values.length, 3072)
    assert.closeTo(norm(answer.body.embeddings[1].values), 1, 1e-5)
    const openai = await embed({ input: "hello", dimensions: 64 })
    assert.deepStrictEqual(answer.body.embeddings[0].values, openai.body.data[0].embedding)
  })

  it("embedContent answers one embedding", async () => {
    const answer = await gemini("gemini-embedding-001", "embedContent", {
      content: { parts: [{ text: "hello" }] },
      outputDimensionality: 64
    })
    assert.strictEqual(answer.status, 200)
    const batch = await gemini("gemini-embedding-001", "batchEmbedContents", {
      requests: [{ content: { parts: [{ text: "hello" }] }, outputDimensionality: 64 }]
    })
    assert.deepStrictEqual(answer.body.embedding.values, batch.body.embeddings[0].values)
    assert.isUndefined(answer.body.usageMetadata)
  })

  it("answers errors in Google's envelope", async () => {
    const empty = await gemini("gemini-embedding-001", "batchEmbedContents", { requests: [{ content: { parts: [] } }] })
    assert.strictEqual(empty.status, 400)
    assert.strictEqual(empty.body.error.status, "INVALID_ARGUMENT")
    const tooBig = await gemini("gemini-embedding-001", "embedContent", {
      content: { parts: [{ text: "x" }] },
      outputDimensionality: 5000
    })
    assert.strictEqual(tooBig.status, 400)
    const otherModel = await gemini("gemini-embedding-001", "batchEmbedContents", {
      requests: [{ model: "models/text-embedding-004", content: { parts: [{ text: "x" }] } }]
    })
    assert.strictEqual(otherModel.status, 400)
    const badKey = await gemini("gemini-embedding-001", "embedContent", { content: { parts: [{ text: "x" }] } }, "nope")
    assert.strictEqual(badKey.status, 400)
    assert.strictEqual(badKey.body.error.details[0].reason, "API_KEY_INVALID")
  })
})
