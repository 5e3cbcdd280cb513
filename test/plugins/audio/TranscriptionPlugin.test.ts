/** The transcription family without an upstream: the multipart form, usage parsing and pricing. */
import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { MultipartParser } from "effect/http"
import { makeModelPricing, type ModelPricing } from "../../../src/app/config/ModelPricing.ts"
import {
  AUDIO_TOKENS_PER_SECOND,
  millisOfSeconds,
  OUTPUT_TOKENS_BASE,
  OUTPUT_TOKENS_PER_SECOND,
  transcriptionForm,
  transcriptionPricing,
  usageOfJson
} from "../../../src/plugins/audio/TranscriptionPlugin.ts"
import type { PluginModel, TranscriptionCall, TranscriptionRequest } from "../../../src/plugins/ModelPlugin.ts"

const modelPriced = (pricing: ModelPricing): PluginModel => ({
  id: "stt",
  upstreams: [],
  upstreamModel: "whisper-1",
  pricing,
  maxOutputTokens: 0
})

const request = (overrides: Partial<TranscriptionRequest> = {}): TranscriptionRequest => ({
  file: { data: new Uint8Array([1, 2, 3, 4]), filename: "clip.mp3", mimeType: "audio/mpeg" },
  responseFormat: "json",
  timestampGranularities: [],
  ...overrides
})

const callOf = (req: TranscriptionRequest): TranscriptionCall => ({
  model: modelPriced(makeModelPricing({ perSecond: 100n })),
  request: req,
  measuredMillis: 1000,
  requestId: "req",
  signal: new AbortController().signal
})

/** The form's fields (repeated names kept in order) and its file, as a server parses them. */
const parseForm = (form: { readonly body: Uint8Array; readonly contentType: string }) => {
  const fields: Array<[string, string]> = []
  const files: Array<{ name: string; filename: string; type: string; bytes: Uint8Array }> = []
  const parser = MultipartParser.make({
    headers: { "content-type": form.contentType },
    onField: (info, value) => fields.push([info.name, MultipartParser.decodeField(info, value)]),
    onFile: (info) => {
      const chunks: Array<Uint8Array> = []
      return (chunk) => {
        if (chunk !== null) chunks.push(chunk)
        else
          files.push({
            name: info.name,
            filename: info.filename ?? "",
            type: info.contentType,
            bytes: Buffer.concat(chunks)
          })
      }
    },
    onError: (error) => {
      throw new Error(String(error._tag))
    },
    onDone: () => {}
  })
  parser.write(form.body)
  parser.end()
  return { fields, files }
}

describe("transcription form", () => {
  it("sends the file with its name and type, every option, and repeated timestamp_granularities[]", () => {
    const form = transcriptionForm(
      callOf(
        request({
          language: "de",
          prompt: "Namen: Ölmühle",
          responseFormat: "verbose_json",
          temperature: 0.2,
          timestampGranularities: ["word", "segment"]
        })
      )
    )
    assert.match(form.contentType, /^multipart\/form-data; boundary=/)
    const { fields, files } = parseForm(form)
    assert.deepStrictEqual(fields, [
      ["model", "whisper-1"],
      ["language", "de"],
      ["prompt", "Namen: Ölmühle"],
      ["response_format", "verbose_json"],
      ["temperature", "0.2"],
      ["timestamp_granularities[]", "word"],
      ["timestamp_granularities[]", "segment"]
    ])
    assert.strictEqual(files.length, 1)
    assert.strictEqual(files[0]?.name, "file")
    assert.strictEqual(files[0]?.filename, "clip.mp3")
    assert.strictEqual(files[0]?.type, "audio/mpeg")
    assert.deepStrictEqual(Array.from(files[0]?.bytes ?? []), [1, 2, 3, 4])
  })

  it("asks for json when the client wants text (so usage comes back) and omits absent options", () => {
    const { fields } = parseForm(transcriptionForm(callOf(request({ responseFormat: "text" }))))
    assert.deepStrictEqual(fields, [
      ["model", "whisper-1"],
      ["response_format", "json"]
    ])
    const srt = parseForm(transcriptionForm(callOf(request({ responseFormat: "srt" }))))
    assert.deepStrictEqual(srt.fields.at(-1), ["response_format", "srt"])
  })
})

describe("transcription usage", () => {
  it("reads duration usage, token usage and verbose_json's duration", () => {
    assert.deepStrictEqual(usageOfJson({ text: "x", usage: { type: "duration", seconds: 12.4 } }), {
      audioMillis: 12_400,
      inputTokens: null,
      outputTokens: null
    })
    assert.deepStrictEqual(
      usageOfJson({ text: "x", usage: { type: "tokens", input_tokens: 120, output_tokens: 33, total_tokens: 153 } }),
      { audioMillis: null, inputTokens: 120, outputTokens: 33 }
    )
    assert.deepStrictEqual(usageOfJson({ text: "x", duration: 3.0005 }), {
      audioMillis: 3001,
      inputTokens: null,
      outputTokens: null
    })
    assert.deepStrictEqual(usageOfJson({ text: "x" }), { audioMillis: null, inputTokens: null, outputTokens: null })
    assert.deepStrictEqual(usageOfJson("not json"), { audioMillis: null, inputTokens: null, outputTokens: null })
  })

  it("turns seconds into whole milliseconds without float noise", () => {
    assert.strictEqual(millisOfSeconds(12.4), 12_400)
    assert.strictEqual(millisOfSeconds(0.1), 100)
    assert.strictEqual(millisOfSeconds(1.0001), 1001)
  })
})

describe("transcription pricing", () => {
  const perSecond = modelPriced(makeModelPricing({ perSecond: 100n }))
  const tokens = modelPriced(makeModelPricing({ input: 2_500_000n, output: 10_000_000n }))

  it("bills perSecond on the reported length, falling back to the measured one, rounded up", () => {
    const usage = { audioMillis: 12_400, inputTokens: null, outputTokens: null, measuredMillis: 12_000 }
    assert.strictEqual(transcriptionPricing.price(usage, perSecond), 1240n)
    assert.strictEqual(transcriptionPricing.price({ ...usage, audioMillis: null }, perSecond), 1200n)
    assert.strictEqual(transcriptionPricing.price({ ...usage, audioMillis: 1 }, perSecond), 1n)
  })

  it("holds whole seconds, rounded up", () => {
    const input = { request: request(), audioMillis: 12_001, promptTokens: 0 }
    assert.strictEqual(transcriptionPricing.estimate(input, perSecond), 1300n)
  })

  it("bills reported tokens, and token bounds for the hold", () => {
    const usage = { audioMillis: null, inputTokens: 100, outputTokens: 40, measuredMillis: 10_000 }
    // 100 × 2.5 + 40 × 10 = 650 micro-dollars.
    assert.strictEqual(transcriptionPricing.price(usage, tokens), 650n)
    const estimate = transcriptionPricing.estimate({ request: request(), audioMillis: 10_000, promptTokens: 5 }, tokens)
    const inputBound = 10 * AUDIO_TOKENS_PER_SECOND + 5
    const outputBound = OUTPUT_TOKENS_BASE + 10 * OUTPUT_TOKENS_PER_SECOND
    // Each price rounds up on its own: ceil(inputBound × 2.5) + outputBound × 10.
    assert.strictEqual(estimate, BigInt(Math.ceil(inputBound * 2.5)) + BigInt(outputBound * 10))
  })

  it("never holds less than it charges for a call within the bounds", () => {
    const both = modelPriced(makeModelPricing({ perSecond: 17n, input: 1_000_000n, output: 3_000_000n }))
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3_600_000 }),
        fc.nat({ max: 500 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 999 }),
        (millis, promptTokens, inputShare, outputShare, roundingMillis) => {
          const seconds = Math.ceil(millis / 1000)
          const estimate = transcriptionPricing.estimate(
            { request: request(), audioMillis: millis, promptTokens },
            both
          )
          const usage = {
            // Upstreams round the length up (never past the next whole second).
            audioMillis: Math.min(seconds * 1000, millis + roundingMillis),
            inputTokens: Math.floor((seconds * AUDIO_TOKENS_PER_SECOND + promptTokens) * inputShare),
            outputTokens: Math.floor((OUTPUT_TOKENS_BASE + seconds * OUTPUT_TOKENS_PER_SECOND) * outputShare),
            measuredMillis: millis
          }
          assert.isTrue(transcriptionPricing.price(usage, both) <= estimate)
          assert.isTrue(
            transcriptionPricing.price({ ...usage, inputTokens: null, outputTokens: null }, both) <= estimate
          )
        }
      )
    )
  })
})
