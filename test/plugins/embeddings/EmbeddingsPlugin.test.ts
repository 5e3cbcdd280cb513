/** The embeddings family without an upstream: request bodies, reply decoding and pricing. */
import { Buffer } from "node:buffer"
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import {
  countEmbeddingInputs,
  decodeBase64Floats,
  embeddingsPricing,
  geminiBatchBody,
  geminiVectors,
  openAiEmbeddingsBody,
  openAiInput,
  openAiVectors
} from "../../../src/plugins/embeddings/EmbeddingsPlugin.ts"
import type { EmbeddingsCall, EmbeddingsRequest, PluginModel } from "../../../src/plugins/ModelPlugin.ts"

const model: PluginModel = {
  id: "emb",
  upstreams: [
    {
      name: "u",
      protocol: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      timeoutMs: 1000,
      idleTimeoutMs: 1000,
      maxConnections: 1
    }
  ],
  upstreamModel: "text-embedding-3-small",
  pricing: makeModelPricing({ input: 20_000n }),
  maxOutputTokens: 0
}

const callOf = (request: EmbeddingsRequest): EmbeddingsCall => ({
  model,
  request,
  requestId: "req",
  signal: new AbortController().signal
})

const text = (t: string) => ({ _tag: "Text", text: t }) as const
const tokens = (ids: ReadonlyArray<number>) => ({ _tag: "Tokens", tokens: ids }) as const

const float32Base64 = (values: ReadonlyArray<number>): string => {
  const bytes = Buffer.alloc(values.length * 4)
  for (const [i, value] of values.entries()) bytes.writeFloatLE(value, i * 4)
  return bytes.toString("base64")
}

describe("embeddings request bodies", () => {
  it("asks OpenAI for base64 with the upstream model, dimensions and user", () => {
    const call = callOf({ inputs: [text("a"), text("b")], dimensions: 64, user: "u-1" })
    const input = openAiInput(call.request.inputs)
    assert.deepStrictEqual(input, ["a", "b"])
    assert.deepStrictEqual(openAiEmbeddingsBody(call, input as ReadonlyArray<string>), {
      model: "text-embedding-3-small",
      input: ["a", "b"],
      dimensions: 64,
      encoding_format: "base64",
      user: "u-1"
    })
  })

  it("omits absent options and sends token arrays as arrays of ids", () => {
    const call = callOf({ inputs: [tokens([1, 2]), tokens([3])] })
    const input = openAiInput(call.request.inputs)
    assert.deepStrictEqual(openAiEmbeddingsBody(call, input as ReadonlyArray<unknown>), {
      model: "text-embedding-3-small",
      input: [[1, 2], [3]],
      encoding_format: "base64"
    })
  })

  it("refuses mixed and empty inputs with a 400", () => {
    const mixed = openAiInput([text("a"), tokens([1])])
    assert.strictEqual((mixed as { reason: string }).reason, "invalid_request")
    assert.strictEqual((openAiInput([]) as { reason: string }).reason, "invalid_request")
  })

  it("sends Gemini one request per text with the model path and outputDimensionality", () => {
    const call = callOf({ inputs: [text("x"), text("y")], dimensions: 8 })
    assert.deepStrictEqual(geminiBatchBody(call, [text("x"), text("y")]), {
      requests: [
        { model: "models/text-embedding-3-small", content: { parts: [{ text: "x" }] }, outputDimensionality: 8 },
        { model: "models/text-embedding-3-small", content: { parts: [{ text: "y" }] }, outputDimensionality: 8 }
      ]
    })
    const plain = geminiBatchBody(callOf({ inputs: [text("x")] }), [text("x")])
    assert.isFalse("outputDimensionality" in (plain.requests[0] ?? {}))
  })
})

describe("embeddings reply decoding", () => {
  it("decodes little-endian float32 base64 exactly", () => {
    fc.assert(
      fc.property(fc.array(fc.float({ noNaN: true, noDefaultInfinity: true }), { maxLength: 64 }), (values) => {
        const decoded = decodeBase64Floats(float32Base64(values))
        assert.deepStrictEqual(
          decoded?.map((v) => (Object.is(v, -0) ? 0 : v)),
          values.map((v) => (Object.is(v, -0) ? 0 : v))
        )
      })
    )
    assert.isUndefined(decodeBase64Floats(Buffer.from([1, 2, 3]).toString("base64")))
  })

  it("puts OpenAI vectors in index order and accepts float arrays", () => {
    const body = {
      data: [
        { object: "embedding", index: 1, embedding: [0.5, -0.25] },
        { object: "embedding", index: 0, embedding: float32Base64([1, 2]) }
      ]
    }
    assert.deepStrictEqual(openAiVectors(body, 2), [
      [1, 2],
      [0.5, -0.25]
    ])
  })

  it("calls a reply with the wrong count, duplicate indexes or junk vectors malformed (502)", () => {
    const reason = (value: unknown) => (value as { reason?: string }).reason
    assert.strictEqual(reason(openAiVectors({ data: [{ index: 0, embedding: [1] }] }, 2)), "unavailable")
    assert.strictEqual(
      reason(
        openAiVectors(
          {
            data: [
              { index: 0, embedding: [1] },
              { index: 0, embedding: [2] }
            ]
          },
          2
        )
      ),
      "unavailable"
    )
    assert.strictEqual(reason(openAiVectors({ data: [{ index: 0, embedding: { x: 1 } }] }, 1)), "unavailable")
    assert.strictEqual(reason(geminiVectors({ embeddings: [{ values: ["a"] }] }, 1)), "unavailable")
    assert.deepStrictEqual(geminiVectors({ embeddings: [{ values: [1, 2] }] }, 1), [[1, 2]])
  })
})

describe("embeddings pricing", () => {
  it("is input tokens × the input price, rounded up to the micro-dollar", () => {
    const request: EmbeddingsRequest = { inputs: [text("hello")] }
    assert.strictEqual(embeddingsPricing.estimate({ request, inputTokens: 1 }, model), 1n)
    assert.strictEqual(embeddingsPricing.estimate({ request, inputTokens: 1_000_000 }, model), 20_000n)
    assert.strictEqual(embeddingsPricing.price({ promptTokens: 50 }, model), 1n)
    assert.strictEqual(embeddingsPricing.price({ promptTokens: 0 }, model), 0n)
    assert.strictEqual(embeddingsPricing.price({ promptTokens: 100 }, model), 2n)
  })

  it("agrees between estimate and price on the same count", () => {
    fc.assert(
      fc.property(fc.nat({ max: 10_000_000 }), (n) => {
        const request: EmbeddingsRequest = { inputs: [] }
        assert.strictEqual(
          embeddingsPricing.estimate({ request, inputTokens: n }, model),
          embeddingsPricing.price({ promptTokens: n }, model)
        )
      })
    )
  })

  it("counts texts with the tokenizer and token arrays by length", () => {
    assert.strictEqual(
      countEmbeddingInputs([text("the quick brown fox"), tokens([1, 2, 3])]),
      countText("the quick brown fox") + 3
    )
  })
})
