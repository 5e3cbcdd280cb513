/** The speech family: the request body and pricing without an upstream. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { makeModelPricing, type ModelPricing } from "../../../src/app/config/ModelPricing.ts"
import {
  OUTPUT_TOKENS_PER_CHARACTER,
  speechBody,
  speechCharacters,
  speechPricing
} from "../../../src/plugins/audio/SpeechPlugin.ts"
import type { PluginModel, SpeechCall, SpeechRequest } from "../../../src/plugins/ModelPlugin.ts"

const modelPriced = (pricing: ModelPricing): PluginModel => ({
  id: "tts",
  upstreams: [],
  upstreamModel: "tts-1",
  pricing,
  maxOutputTokens: 0
})

const request = (overrides: Partial<SpeechRequest> = {}): SpeechRequest => ({
  input: "Hello there.",
  voice: "alloy",
  responseFormat: "mp3",
  ...overrides
})

const callOf = (req: SpeechRequest): SpeechCall => ({
  model: modelPriced(makeModelPricing({ perMillionCharacters: 15_000_000n })),
  request: req,
  requestId: "req",
  signal: new AbortController().signal
})

describe("speech request body", () => {
  it("carries the upstream model and the client's options, without absent ones", () => {
    assert.deepStrictEqual(speechBody(callOf(request())), {
      model: "tts-1",
      input: "Hello there.",
      voice: "alloy",
      response_format: "mp3"
    })
    assert.deepStrictEqual(speechBody(callOf(request({ speed: 1.5, instructions: "calm", responseFormat: "wav" }))), {
      model: "tts-1",
      input: "Hello there.",
      voice: "alloy",
      response_format: "wav",
      speed: 1.5,
      instructions: "calm"
    })
  })
})

describe("speech pricing", () => {
  it("counts characters as code points", () => {
    assert.strictEqual(speechCharacters("abc"), 3)
    assert.strictEqual(speechCharacters("héllo 👋🏽"), 8)
    assert.strictEqual(speechCharacters("日本語"), 3)
    assert.strictEqual(speechCharacters(""), 0)
  })

  it("bills characters per million, rounded up", () => {
    const model = modelPriced(makeModelPricing({ perMillionCharacters: 15_000_000n }))
    // 12 characters × USD 15 / 1M = 180 micro-dollars.
    assert.strictEqual(speechPricing.estimate({ request: request(), inputTokens: 3 }, model), 180n)
    assert.strictEqual(speechPricing.price({ characters: 12, inputTokens: 3 }, model), 180n)
    assert.strictEqual(speechPricing.price({ characters: 1, inputTokens: 0 }, model), 15n)
    const cheap = modelPriced(makeModelPricing({ perMillionCharacters: 1n }))
    assert.strictEqual(speechPricing.price({ characters: 1, inputTokens: 0 }, cheap), 1n)
  })

  it("adds input tokens and character-derived output tokens when the model prices them", () => {
    const model = modelPriced(makeModelPricing({ input: 600_000n, output: 12_000_000n }))
    const expected = 2n + BigInt(12 * OUTPUT_TOKENS_PER_CHARACTER * 12)
    // 3 input tokens × 0.6 = 1.8 → 2; 24 output tokens × 12 = 288.
    assert.strictEqual(speechPricing.price({ characters: 12, inputTokens: 3 }, model), expected)
  })

  it("holds exactly what it charges", () => {
    const model = modelPriced(makeModelPricing({ perMillionCharacters: 15_000_000n, input: 600_000n, output: 1n }))
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), fc.nat({ max: 5000 }), (input, inputTokens) => {
        assert.strictEqual(
          speechPricing.estimate({ request: request({ input }), inputTokens }, model),
          speechPricing.price({ characters: speechCharacters(input), inputTokens }, model)
        )
      })
    )
  })
})
