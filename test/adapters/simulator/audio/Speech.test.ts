import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import { type RunningSimulator, startSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"
import { decodedSeconds, postJson, probeAudio } from "./AudioHttp.ts"

let sim: RunningSimulator
beforeAll(async () => {
  sim = await startSimulator()
})
afterAll(() => sim.close())

const speak = async (body: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const response = await fetch(`${sim.baseUrl}/v1/audio/speech`, {
    method: "POST",
    headers: { authorization: `Bearer ${sim.apiKey}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ model: "gpt-4o-mini-tts", voice: "alloy", ...body })
  })
  return { response, bytes: new Uint8Array(await response.arrayBuffer()) }
}

const FORMATS = [
  { format: "mp3", contentType: "audio/mpeg", codec: "mp3", extension: "mp3" },
  { format: "opus", contentType: "audio/ogg", codec: "opus", extension: "ogg" },
  { format: "aac", contentType: "audio/aac", codec: "aac", extension: "aac" },
  { format: "flac", contentType: "audio/flac", codec: "flac", extension: "flac" },
  { format: "wav", contentType: "audio/wav", codec: "pcm_s16le", extension: "wav" }
]

// 40 characters: 2.4 s at speed 1.
const TEXT = "Hello there, this is a simulated voice!!"

describe("simulator: OpenAI speech", () => {
  for (const { format, contentType, codec, extension } of FORMATS) {
    it(`${format}: real ${codec} audio, 60 ms per character`, async () => {
      const { response, bytes } = await speak({ input: TEXT, response_format: format })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), contentType)
      const info = await probeAudio(bytes, extension)
      assert.strictEqual(info.codec, codec)
      assert.strictEqual(info.channels, 1)
      const seconds = await decodedSeconds(bytes, extension)
      assert.closeTo(seconds, TEXT.length * 0.06, 0.1)
    })
  }

  it("pcm: raw 24 kHz s16le mono, exactly 60 ms per character, with a content length", async () => {
    const { response, bytes } = await speak({ input: TEXT, response_format: "pcm" })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers.get("content-type"), "audio/pcm")
    assert.strictEqual(Number(response.headers.get("content-length")), bytes.length)
    assert.strictEqual(bytes.length, TEXT.length * 0.06 * 24_000 * 2)
    const info = await probeAudio(bytes, "pcm", true)
    assert.strictEqual(info.codec, "pcm_s16le")
  })

  it("compressed formats stream chunked", async () => {
    const { response } = await speak({ input: TEXT, response_format: "mp3" })
    assert.strictEqual(response.headers.get("transfer-encoding"), "chunked")
    assert.isNull(response.headers.get("content-length"))
  })

  it("duration scales with the input and the speed, with a 0.5 s floor", async () => {
    const long = await speak({ input: TEXT.repeat(3), response_format: "wav" })
    assert.closeTo((await probeAudio(long.bytes, "wav")).durationSeconds, 3 * TEXT.length * 0.06, 0.001)
    const fast = await speak({ input: TEXT, response_format: "wav", speed: 2 })
    assert.closeTo((await probeAudio(fast.bytes, "wav")).durationSeconds, TEXT.length * 0.03, 0.001)
    const short = await speak({ input: "Hi", response_format: "wav" })
    assert.closeTo((await probeAudio(short.bytes, "wav")).durationSeconds, 0.5, 0.001)
    const slowMp3 = await speak({ input: TEXT, response_format: "mp3", speed: 0.5 })
    assert.closeTo(await decodedSeconds(slowMp3.bytes, "mp3"), TEXT.length * 0.12, 0.1)
  })

  it("is deterministic, and differs by text and voice", async () => {
    const a = await speak({ input: TEXT, response_format: "wav" })
    const b = await speak({ input: TEXT, response_format: "wav" })
    const other = await speak({ input: TEXT.toUpperCase(), response_format: "wav" })
    const voice = await speak({ input: TEXT, response_format: "wav", voice: "onyx" })
    assert.deepStrictEqual(a.bytes, b.bytes)
    assert.notDeepEqual(a.bytes, other.bytes)
    assert.notDeepEqual(a.bytes, voice.bytes)
  })

  it("works with openai-node (mp3 by default)", async () => {
    const client = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
    const reply = await client.audio.speech.create({ model: "tts-1", voice: "nova", input: TEXT })
    assert.strictEqual(reply.headers.get("content-type"), "audio/mpeg")
    const bytes = new Uint8Array(await reply.arrayBuffer())
    assert.strictEqual((await probeAudio(bytes, "mp3")).codec, "mp3")
  })

  it("rejects bad requests in OpenAI's envelope", async () => {
    for (const body of [
      { input: "" },
      { input: "x".repeat(4097) },
      { input: "x", voice: "nobody" },
      { input: "x", response_format: "ogg" },
      { input: "x", speed: 5 },
      { input: "x", speed: 0.1 }
    ]) {
      const answer = await postJson(sim, "/v1/audio/speech", { model: "tts-1", voice: "alloy", ...body })
      assert.strictEqual(answer.status, 400, JSON.stringify(body))
      assert.strictEqual(answer.body.error.type, "invalid_request_error")
    }
    const noVoice = await postJson(sim, "/v1/audio/speech", { model: "tts-1", input: "x" })
    assert.strictEqual(noVoice.status, 400)
    assert.strictEqual(noVoice.body.error.param, "voice")
    const unauthorized = await postJson(sim, "/v1/audio/speech", { model: "tts-1", input: "x", voice: "alloy" }, {})
    assert.strictEqual(unauthorized.status, 401)
  })

  it("applies fault knobs: a forced status, and a body cut mid-stream", async () => {
    const forced = await postJson(
      sim,
      "/v1/audio/speech",
      { model: "tts-1", input: "x", voice: "alloy" },
      { authorization: `Bearer ${sim.apiKey}`, "x-sim-fault": "status=503" }
    )
    assert.strictEqual(forced.status, 503)
    const cut = await speak({ input: TEXT.repeat(20), response_format: "mp3" }, { "x-sim-fault": "cut=1" }).then(
      () => "complete",
      () => "cut"
    )
    assert.strictEqual(cut, "cut")
    assert.strictEqual(sim.calls().at(-1)?.path, "/v1/audio/speech")
  })
})
