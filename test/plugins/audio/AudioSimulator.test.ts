/**
 * The transcription and speech plugins against the simulator's OpenAI audio routes, through the real upstream
 * client: every transcription format with its usage and price, real audio streamed back from speech, failures, and
 * one attempt per call (failover is routing's).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { audioDurationMillis } from "../../../src/adapters/media/AudioDuration.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import { makeSpeechPlugin } from "../../../src/plugins/audio/SpeechPlugin.ts"
import { makeTranscriptionPlugin } from "../../../src/plugins/audio/TranscriptionPlugin.ts"
import type {
  PluginModel,
  SpeechPlugin,
  SpeechRequest,
  TranscriptionFormat,
  TranscriptionPlugin,
  TranscriptionRequest
} from "../../../src/plugins/ModelPlugin.ts"
import {
  closedPort,
  collect,
  failure,
  type Harness,
  modelOn,
  openHarness,
  run,
  upstreamOn,
  wavFile
} from "./SimulatorHarness.ts"

let harness: Harness
let transcription: TranscriptionPlugin
let speech: SpeechPlugin

beforeAll(async () => {
  harness = await openHarness()
  transcription = makeTranscriptionPlugin(harness.client)
  speech = makeSpeechPlugin(harness.client)
}, 30_000)

afterAll(async () => {
  await harness?.close()
})

const perSecond = makeModelPricing({ perSecond: 100n })
const whisper = () => modelOn([upstreamOn(harness.sim, "openai")], "whisper-1", perSecond)

const transcribeRequest = (
  format: TranscriptionFormat,
  overrides: Partial<TranscriptionRequest> = {}
): TranscriptionRequest => ({
  file: { data: wavFile(2.5), filename: "clip.wav", mimeType: "audio/wav" },
  responseFormat: format,
  timestampGranularities: [],
  ...overrides
})

const transcribe = (model: PluginModel, request: TranscriptionRequest, measuredMillis: number | null = 2500) =>
  transcription.transcribe({
    model,
    request,
    measuredMillis,
    requestId: "req-stt",
    signal: new AbortController().signal
  })

const lastTranscriptionCall = () => harness.sim.calls().findLast((c) => c.path === "/v1/audio/transcriptions")

describe("transcription on the simulator", () => {
  it("json: parses the body and reports the duration, billed per second", async () => {
    const reply = await run(transcribe(whisper(), transcribeRequest("json")))
    assert.strictEqual(reply.body._tag, "Json")
    const value = (reply.body as { value: { text: string } }).value
    assert.match(value.text, /Simulated transcript of 2\.5 seconds/)
    assert.deepStrictEqual(reply.usage, { audioMillis: 2500, inputTokens: null, outputTokens: null })
    const price = transcription.pricing.price({ ...reply.usage, measuredMillis: 2500 }, whisper())
    assert.strictEqual(price, 250n)
    const hold = transcription.pricing.estimate(
      { request: transcribeRequest("json"), audioMillis: 2500, promptTokens: 0 },
      whisper()
    )
    assert.isTrue(price <= hold)
  })

  it("verbose_json: word timestamps asked with repeated timestamp_granularities[], duration reported", async () => {
    const reply = await run(
      transcribe(
        whisper(),
        transcribeRequest("verbose_json", {
          timestampGranularities: ["word", "segment"],
          language: "en",
          temperature: 0
        })
      )
    )
    const value = (reply.body as { value: Record<string, unknown> }).value
    assert.isArray(value.words)
    assert.isArray(value.segments)
    assert.strictEqual(reply.usage.audioMillis, 2500)
  })

  it("text: the transcript plus a newline, billed by the upstream's reported duration", async () => {
    const reply = await run(transcribe(whisper(), transcribeRequest("text")))
    assert.strictEqual(reply.body._tag, "Text")
    const text = (reply.body as { text: string }).text
    assert.match(text, /^Simulated transcript of 2\.5 seconds of audio: .+\.\n$/)
    assert.strictEqual(reply.usage.audioMillis, 2500)
  })

  it("srt and vtt: the upstream's text as is, no usage (billed by the measured length)", async () => {
    const srt = await run(transcribe(whisper(), transcribeRequest("srt")))
    assert.match((srt.body as { text: string }).text, /^1\n00:00:00,000 --> /)
    assert.deepStrictEqual(srt.usage, { audioMillis: null, inputTokens: null, outputTokens: null })
    assert.strictEqual(transcription.pricing.price({ ...srt.usage, measuredMillis: 2500 }, whisper()), 250n)
    const vtt = await run(transcribe(whisper(), transcribeRequest("vtt")))
    assert.match((vtt.body as { text: string }).text, /^WEBVTT\n/)
  })

  it("token-billed models: reported tokens, within the hold", async () => {
    const tokens = makeModelPricing({ input: 2_500_000n, output: 10_000_000n })
    const model = modelOn([upstreamOn(harness.sim, "openai")], "gpt-4o-transcribe", tokens)
    const request = transcribeRequest("json", { prompt: "A short test clip about rivers." })
    const reply = await run(transcribe(model, request))
    assert.isNotNull(reply.usage.inputTokens)
    assert.isNotNull(reply.usage.outputTokens)
    const price = transcription.pricing.price({ ...reply.usage, measuredMillis: 2500 }, model)
    const hold = transcription.pricing.estimate({ request, audioMillis: 2500, promptTokens: 8 }, model)
    assert.isTrue(price > 0n && price <= hold, `price ${price}, hold ${hold}`)
  })

  it("sends the file under its own name with the upstream model", async () => {
    harness.sim.clearCalls()
    await run(transcribe(whisper(), transcribeRequest("json")))
    const call = lastTranscriptionCall()
    assert.match(String(call?.headers["content-type"]), /^multipart\/form-data; boundary=/)
    assert.strictEqual(call?.headers.authorization, `Bearer ${harness.sim.apiKey}`)
  })

  it("an mp3 measured by the gateway matches the length the upstream reports", async () => {
    const speechReply = await run(
      speech.speak({
        model: modelOn([upstreamOn(harness.sim, "openai")], "tts-1", makeModelPricing({ perMillionCharacters: 1n })),
        request: {
          input: "A sentence long enough to make a second or two of audio.",
          voice: "alloy",
          responseFormat: "mp3"
        },
        requestId: "req",
        signal: new AbortController().signal
      })
    )
    const mp3 = await collect(speechReply.body)
    const measured = await Effect.runPromise(audioDurationMillis(mp3, "speech.mp3"))
    assert.isNotNull(measured)
    const reply = await run(
      transcribe(
        whisper(),
        transcribeRequest("json", { file: { data: mp3, filename: "speech.mp3", mimeType: "audio/mpeg" } }),
        measured
      )
    )
    assert.isAtMost(Math.abs((reply.usage.audioMillis ?? 0) - (measured ?? 0)), 150)
  })

  it("maps the upstream's 400 for a corrupt file to a 400, without trying the next upstream", async () => {
    harness.sim.clearCalls()
    const model = modelOn(
      [upstreamOn(harness.sim, "openai"), upstreamOn(harness.sim, "openai", { name: "second" })],
      "whisper-1",
      perSecond
    )
    const bad = transcribeRequest("json", {
      file: { data: new TextEncoder().encode("not audio"), filename: "x.mp3", mimeType: "audio/mpeg" }
    })
    const failed = await failure(transcribe(model, bad, null))
    assert.strictEqual(failed.reason, "invalid_request")
    assert.strictEqual(harness.sim.calls().filter((c) => c.path === "/v1/audio/transcriptions").length, 1)
  })

  it("makes one attempt, on the upstream routing chose: an unreachable one fails the call", async () => {
    const port = await closedPort()
    harness.sim.clearCalls()
    const model = modelOn(
      [
        upstreamOn(harness.sim, "openai", { name: "down", baseUrl: `http://127.0.0.1:${port}/v1` }),
        upstreamOn(harness.sim, "openai")
      ],
      "whisper-1",
      perSecond
    )
    assert.strictEqual((await failure(transcribe(model, transcribeRequest("json")))).reason, "unavailable")
    // Another deployment is routing's to try (test/http/routing/KindsFailover.test.ts).
    assert.strictEqual(harness.sim.calls().filter((c) => c.path === "/v1/audio/transcriptions").length, 0)
  })

  it("fails with a 500 when the model has no openai upstream", async () => {
    const model = modelOn([upstreamOn(harness.sim, "gemini")], "whisper-1", perSecond)
    assert.strictEqual((await failure(transcribe(model, transcribeRequest("json")))).reason, "misconfigured")
  })
})

const tts = () =>
  modelOn([upstreamOn(harness.sim, "openai")], "tts-1", makeModelPricing({ perMillionCharacters: 15_000_000n }))

const speak = (model: PluginModel, request: Partial<SpeechRequest> = {}) =>
  speech.speak({
    model,
    request: { input: "Hello from the gateway.", voice: "alloy", responseFormat: "wav", ...request },
    requestId: "req-tts",
    signal: new AbortController().signal
  })

describe("speech on the simulator", () => {
  it("streams a real WAV with the upstream's content type", async () => {
    harness.sim.clearCalls()
    const reply = await run(speak(tts(), { speed: 1.25 }))
    assert.strictEqual(reply.contentType, "audio/wav")
    const bytes = await collect(reply.body)
    assert.strictEqual(bytes.subarray(0, 4).toString("ascii"), "RIFF")
    const millis = await Effect.runPromise(audioDurationMillis(bytes))
    assert.isTrue((millis ?? 0) > 0)
    const sent = harness.sim.calls().find((c) => c.path === "/v1/audio/speech")?.body
    assert.deepStrictEqual(sent, {
      model: "tts-1",
      input: "Hello from the gateway.",
      voice: "alloy",
      response_format: "wav",
      speed: 1.25
    })
  })

  it("streams mp3 and flac made by ffmpeg", async () => {
    const mp3 = await run(speak(tts(), { responseFormat: "mp3" }))
    assert.strictEqual(mp3.contentType, "audio/mpeg")
    assert.isNotNull(await Effect.runPromise(audioDurationMillis(await collect(mp3.body))))
    const flac = await run(speak(tts(), { responseFormat: "flac" }))
    assert.strictEqual(flac.contentType, "audio/flac")
    const bytes = await collect(flac.body)
    assert.strictEqual(bytes.subarray(0, 4).toString("ascii"), "fLaC")
  })

  it("maps an unknown voice to a 400", async () => {
    assert.strictEqual((await failure(speak(tts(), { voice: "nobody" }))).reason, "invalid_request")
  })

  it("makes one attempt, on the upstream routing chose: an unreachable one fails the call", async () => {
    const port = await closedPort()
    harness.sim.clearCalls()
    const model = modelOn(
      [
        upstreamOn(harness.sim, "openai", { name: "down", baseUrl: `http://127.0.0.1:${port}/v1` }),
        upstreamOn(harness.sim, "openai")
      ],
      "tts-1",
      makeModelPricing({ perMillionCharacters: 15_000_000n })
    )
    assert.strictEqual((await failure(speak(model))).reason, "unavailable")
    // Another deployment is routing's to try (test/http/routing/KindsFailover.test.ts).
    assert.strictEqual(harness.sim.calls().filter((c) => c.path === "/v1/audio/speech").length, 0)
  })

  it("stops the upstream when the consumer stops reading", async () => {
    harness.sim.clearCalls()
    const reply = await run(speak(tts(), { input: "A much longer sentence ".repeat(170), responseFormat: "pcm" }))
    const iterator = reply.body[Symbol.asyncIterator]()
    const first = await iterator.next()
    assert.isFalse(first.done)
    await iterator.return?.()
    const call = () => harness.sim.calls().find((c) => c.path === "/v1/audio/speech")
    for (let waited = 0; waited < 2000 && call()?.abandoned !== true; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.isTrue(call()?.abandoned, "the upstream connection was not closed")
  })
})
