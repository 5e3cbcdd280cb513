/**
 * The embeddings plugin against the simulator's OpenAI `/v1/embeddings` and Gemini `:batchEmbedContents`, through
 * the real upstream client: vectors decoded from base64, usage, Gemini batching and billing, one attempt per call,
 * failures.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { embeddingVector } from "../../../src/adapters/simulator/audio/EmbeddingVectors.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import { makeEmbeddingsPlugin } from "../../../src/plugins/embeddings/EmbeddingsPlugin.ts"
import type {
  EmbeddingsCall,
  EmbeddingsPlugin,
  EmbeddingsRequest,
  PluginModel
} from "../../../src/plugins/ModelPlugin.ts"
import { closedPort, failure, type Harness, modelOn, openHarness, run, upstreamOn } from "../audio/SimulatorHarness.ts"

let harness: Harness
let plugin: EmbeddingsPlugin

beforeAll(async () => {
  harness = await openHarness()
  plugin = makeEmbeddingsPlugin(harness.client)
}, 30_000)

afterAll(async () => {
  await harness?.close()
})

const pricing = makeModelPricing({ input: 20_000n })
const openai = () => modelOn([upstreamOn(harness.sim, "openai")], "sim-embedding", pricing)
const gemini = () => modelOn([upstreamOn(harness.sim, "gemini")], "gemini-embedding-001", pricing)

const call = (model: PluginModel, request: EmbeddingsRequest, inputTokens?: number): EmbeddingsCall => ({
  model,
  request,
  ...(inputTokens === undefined ? {} : { inputTokens }),
  requestId: "req-embeddings",
  signal: new AbortController().signal
})

const texts = (...values: ReadonlyArray<string>) => values.map((text) => ({ _tag: "Text", text }) as const)

/** float32 rounding of the simulator's vector, as the wire carries it. */
const asFloat32 = (vector: ReadonlyArray<number>) => Array.from(Float32Array.from(vector))

describe("embeddings on the simulator's OpenAI API", () => {
  it("asks for base64, decodes float32 vectors in input order, and reports the upstream's tokens", async () => {
    harness.sim.clearCalls()
    const inputs = texts("the first sentence", "a second, longer sentence to embed")
    const reply = await run(plugin.embed(call(openai(), { inputs, dimensions: 16 })))
    assert.strictEqual(reply.vectors.length, 2)
    inputs.forEach((input, i) => {
      assert.deepStrictEqual(reply.vectors[i], asFloat32(embeddingVector({ _tag: "Text", text: input.text }, 16)))
    })
    assert.strictEqual(reply.promptTokens, countText(inputs[0]!.text) + countText(inputs[1]!.text))
    const sent = harness.sim.calls().find((c) => c.path === "/v1/embeddings")?.body as Record<string, unknown>
    assert.deepStrictEqual(sent, {
      model: "sim-embedding",
      input: inputs.map((i) => i.text),
      dimensions: 16,
      encoding_format: "base64"
    })
  })

  it("embeds token-id arrays", async () => {
    const reply = await run(
      plugin.embed(
        call(openai(), {
          inputs: [
            { _tag: "Tokens", tokens: [1, 2, 3] },
            { _tag: "Tokens", tokens: [4] }
          ],
          dimensions: 4
        })
      )
    )
    assert.strictEqual(reply.vectors.length, 2)
    assert.strictEqual(reply.promptTokens, 4)
    assert.strictEqual(reply.vectors[0]?.length, 4)
  })

  it("maps an upstream 400 to a 400 and does not try another upstream", async () => {
    harness.sim.clearCalls()
    const twice = modelOn(
      [upstreamOn(harness.sim, "openai"), upstreamOn(harness.sim, "openai", { name: "second" })],
      "sim-embedding",
      pricing
    )
    const failed = await failure(plugin.embed(call(twice, { inputs: texts("x"), dimensions: 99_999 })))
    assert.strictEqual(failed.reason, "invalid_request")
    assert.strictEqual(harness.sim.calls().filter((c) => c.path === "/v1/embeddings").length, 1)
  })

  it("makes one attempt, on the upstream routing chose: an unreachable one fails the call, the next is not called", async () => {
    const port = await closedPort()
    harness.sim.clearCalls()
    const model = modelOn(
      [
        upstreamOn(harness.sim, "openai", { name: "down", baseUrl: `http://127.0.0.1:${port}/v1` }),
        upstreamOn(harness.sim, "openai", { name: "good" })
      ],
      "sim-embedding",
      pricing
    )
    const failed = await failure(plugin.embed(call(model, { inputs: texts("fallback"), dimensions: 4 })))
    assert.strictEqual(failed.reason, "unavailable")
    // Another deployment is routing's to try (test/http/routing/KindsFailover.test.ts).
    assert.strictEqual(harness.sim.calls().filter((c) => c.path === "/v1/embeddings").length, 0)
  })
})

describe("embeddings on the simulator's Gemini API", () => {
  it("gets the same vectors as OpenAI's route and bills the gateway's count", async () => {
    harness.sim.clearCalls()
    const inputs = texts("alpha", "beta gamma")
    const reply = await run(plugin.embed(call(gemini(), { inputs, dimensions: 16 }, 7)))
    inputs.forEach((input, i) => {
      const expected = embeddingVector({ _tag: "Text", text: input.text }, 16)
      reply.vectors[i]?.forEach((v, j) => {
        assert.closeTo(v, expected[j]!, 1e-6)
      })
    })
    assert.strictEqual(reply.promptTokens, 7)
    const sent = harness.sim.calls().find((c) => c.path.endsWith(":batchEmbedContents"))
    assert.strictEqual(sent?.path, "/v1beta/models/gemini-embedding-001:batchEmbedContents")
    assert.strictEqual(sent?.headers["x-goog-api-key"], harness.sim.apiKey)
  })

  it("counts the texts itself when the gateway passes no count", async () => {
    const reply = await run(plugin.embed(call(gemini(), { inputs: texts("one two three"), dimensions: 4 })))
    assert.strictEqual(reply.promptTokens, countText("one two three"))
  })

  it("splits more than 100 inputs into batches and keeps their order", async () => {
    harness.sim.clearCalls()
    const inputs = texts(...Array.from({ length: 230 }, (_, i) => `input number ${i}`))
    const reply = await run(plugin.embed(call(gemini(), { inputs, dimensions: 2 })))
    assert.strictEqual(reply.vectors.length, 230)
    const last = embeddingVector({ _tag: "Text", text: "input number 229" }, 2)
    reply.vectors[229]?.forEach((v, j) => {
      assert.closeTo(v, last[j]!, 1e-6)
    })
    assert.strictEqual(harness.sim.calls().filter((c) => c.path.endsWith(":batchEmbedContents")).length, 3)
  })

  it("sends each text's taskType and title to Gemini, and neither to OpenAI", async () => {
    harness.sim.clearCalls()
    const inputs = [
      { _tag: "Text", text: "a query", taskType: "RETRIEVAL_QUERY" },
      { _tag: "Text", text: "a document", taskType: "RETRIEVAL_DOCUMENT", title: "The document" },
      { _tag: "Text", text: "no hints" }
    ] as const
    await run(plugin.embed(call(gemini(), { inputs, dimensions: 4 })))
    const sent = harness.sim.calls().find((c) => c.path.endsWith(":batchEmbedContents"))?.body as {
      requests: ReadonlyArray<Record<string, unknown>>
    }
    assert.deepStrictEqual(
      sent.requests.map((r) => [r.taskType, r.title]),
      [
        ["RETRIEVAL_QUERY", undefined],
        ["RETRIEVAL_DOCUMENT", "The document"],
        [undefined, undefined]
      ]
    )
    assert.deepStrictEqual(Object.keys(sent.requests[2] ?? {}).sort(), ["content", "model", "outputDimensionality"])
    harness.sim.clearCalls()
    await run(plugin.embed(call(openai(), { inputs, dimensions: 4 })))
    const openAiBody = harness.sim.calls().find((c) => c.path === "/v1/embeddings")?.body as Record<string, unknown>
    assert.deepStrictEqual(openAiBody.input, ["a query", "a document", "no hints"])
    assert.notProperty(openAiBody, "taskType")
  })

  it("refuses token-id inputs with a 400 before calling Gemini", async () => {
    harness.sim.clearCalls()
    const failed = await failure(plugin.embed(call(gemini(), { inputs: [{ _tag: "Tokens", tokens: [1, 2] }] })))
    assert.strictEqual(failed.reason, "invalid_request")
    assert.strictEqual(harness.sim.calls().length, 0)
  })

  it("sends token-id inputs only to the OpenAI upstreams of a mixed model", async () => {
    harness.sim.clearCalls()
    const mixed = modelOn(
      [upstreamOn(harness.sim, "gemini"), upstreamOn(harness.sim, "openai")],
      "sim-embedding",
      pricing
    )
    const reply = await run(plugin.embed(call(mixed, { inputs: [{ _tag: "Tokens", tokens: [5, 6] }], dimensions: 3 })))
    assert.strictEqual(reply.promptTokens, 2)
    assert.deepStrictEqual(
      harness.sim.calls().map((c) => c.path),
      ["/v1/embeddings"]
    )
  })
})
