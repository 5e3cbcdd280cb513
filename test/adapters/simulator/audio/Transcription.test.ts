import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI, { toFile } from "openai"
import { type RunningSimulator, startSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../../../../src/adapters/tokenizer/Tokenizer.ts"
import { makeWav, postForm } from "./AudioHttp.ts"

let sim: RunningSimulator
beforeAll(async () => {
  sim = await startSimulator()
})
afterAll(() => sim.close())

const SECONDS = 7.25
const wav = makeWav(SECONDS)

const transcribe = (
  fields: Record<string, string | ReadonlyArray<string>>,
  file: Uint8Array = wav,
  name = "clip.wav"
) => {
  const form = new FormData()
  form.append("file", new Blob([Buffer.from(file)]), name)
  for (const [key, value] of Object.entries(fields)) {
    for (const one of typeof value === "string" ? [value] : value) form.append(key, one)
  }
  return postForm(sim, "/v1/audio/transcriptions", form)
}

const cueTimes = (text: string, separator: "," | ".") => {
  const pattern = new RegExp(
    `(\\d{2}):(\\d{2}):(\\d{2})\\${separator}(\\d{3}) --> (\\d{2}):(\\d{2}):(\\d{2})\\${separator}(\\d{3})`,
    "g"
  )
  return [...text.matchAll(pattern)].map((m) => {
    const n = m.slice(1).map(Number)
    return {
      start: n[0]! * 3600 + n[1]! * 60 + n[2]! + n[3]! / 1000,
      end: n[4]! * 3600 + n[5]! * 60 + n[6]! + n[7]! / 1000
    }
  })
}

describe("simulator: OpenAI transcriptions", () => {
  it("json (whisper-1): deterministic text naming the duration, usage by duration", async () => {
    const first = await transcribe({ model: "whisper-1" })
    const again = await transcribe({ model: "whisper-1" })
    assert.strictEqual(first.status, 200)
    assert.include(first.body.text, "7.3 seconds of audio")
    assert.strictEqual(first.body.text, again.body.text)
    assert.deepStrictEqual(first.body.usage, { type: "duration", seconds: 7.3 })
    const other = await transcribe({ model: "whisper-1" }, makeWav(SECONDS, 8000))
    assert.notStrictEqual(other.body.text, first.body.text)
  })

  it("json (gpt-4o-transcribe): token usage with audio tokens at 10 per second", async () => {
    const answer = await transcribe({ model: "gpt-4o-transcribe", prompt: "A short clip." })
    assert.strictEqual(answer.status, 200)
    const textTokens = countText("A short clip.")
    const outputTokens = countText(answer.body.text)
    assert.deepStrictEqual(answer.body.usage, {
      type: "tokens",
      input_tokens: textTokens + 73,
      input_token_details: { text_tokens: textTokens, audio_tokens: 73 },
      output_tokens: outputTokens,
      total_tokens: textTokens + 73 + outputTokens
    })
    const srt = await transcribe({ model: "gpt-4o-transcribe", response_format: "srt" })
    assert.strictEqual(srt.status, 400)
  })

  it("verbose_json: duration, segments covering it, and words when asked", async () => {
    const answer = await transcribe({
      model: "whisper-1",
      response_format: "verbose_json",
      language: "en",
      "timestamp_granularities[]": ["word", "segment"]
    })
    assert.strictEqual(answer.status, 200)
    const body = answer.body
    assert.strictEqual(body.task, "transcribe")
    assert.strictEqual(body.language, "english")
    assert.strictEqual(body.duration, SECONDS)
    assert.deepStrictEqual(body.usage, { type: "duration", seconds: 7.3 })
    assert.isAbove(body.segments.length, 0)
    assert.strictEqual(body.segments[0].start, 0)
    assert.strictEqual(body.segments.at(-1).end, SECONDS)
    assert.strictEqual(
      body.segments
        .map((s: { text: string }) => s.text)
        .join("")
        .trim(),
      body.text
    )
    for (const key of ["id", "seek", "tokens", "temperature", "avg_logprob", "compression_ratio", "no_speech_prob"]) {
      assert.property(body.segments[0], key)
    }
    assert.strictEqual(body.words.at(-1).end, SECONDS)
    const noWords = await transcribe({ model: "whisper-1", response_format: "verbose_json" })
    assert.isUndefined(noWords.body.words)
  })

  it("text, srt and vtt: plain text, with cues covering the duration", async () => {
    const text = await transcribe({ model: "whisper-1", response_format: "text" })
    assert.strictEqual(text.headers.get("content-type"), "text/plain; charset=utf-8")
    assert.include(text.text, "7.3 seconds of audio")
    const srt = await transcribe({ model: "whisper-1", response_format: "srt" })
    assert.strictEqual(srt.headers.get("content-type"), "text/plain; charset=utf-8")
    assert.match(srt.text, /^1\n00:00:00,000 --> /)
    const srtCues = cueTimes(srt.text, ",")
    assert.isAbove(srtCues.length, 0)
    assert.strictEqual(srtCues.at(-1)!.end, SECONDS)
    const vtt = await transcribe({ model: "whisper-1", response_format: "vtt" })
    assert.match(vtt.text, /^WEBVTT\n\n00:00:00\.000 --> /)
    const vttCues = cueTimes(vtt.text, ".")
    assert.deepStrictEqual(vttCues, srtCues)
  })

  it("reads the duration of other containers with ffmpeg", async () => {
    const speech = await fetch(`${sim.baseUrl}/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${sim.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tts-1", voice: "alloy", input: "x".repeat(50), response_format: "flac" })
    })
    const flac = new Uint8Array(await speech.arrayBuffer())
    const answer = await transcribe({ model: "whisper-1", response_format: "verbose_json" }, flac, "speech.flac")
    assert.strictEqual(answer.status, 200)
    assert.closeTo(answer.body.duration, 3, 0.05)
  })

  it("works with openai-node", async () => {
    const client = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
    const reply = await client.audio.transcriptions.create({
      model: "whisper-1",
      file: await toFile(wav, "clip.wav"),
      response_format: "verbose_json",
      timestamp_granularities: ["word"]
    })
    assert.strictEqual(reply.duration, SECONDS)
    assert.isAbove(reply.words!.length, 0)
    const srt = await client.audio.transcriptions.create({
      model: "whisper-1",
      file: await toFile(wav, "clip.wav"),
      response_format: "srt"
    })
    assert.isString(srt)
  })

  it("rejects empty, garbage and unsupported uploads with 400", async () => {
    const empty = await transcribe({ model: "whisper-1" }, new Uint8Array(0))
    assert.strictEqual(empty.status, 400)
    assert.strictEqual(empty.body.error.code, "invalid_value")
    const garbage = await transcribe({ model: "whisper-1" }, Buffer.from("definitely not audio ".repeat(20)), "a.mp3")
    assert.strictEqual(garbage.status, 400)
    assert.strictEqual(garbage.body.error.message, "Audio file might be corrupted or unsupported")
    const brokenWav = await transcribe({ model: "whisper-1" }, wav.subarray(0, 20))
    assert.strictEqual(brokenWav.status, 400)
    const extension = await transcribe({ model: "whisper-1" }, wav, "clip.txt")
    assert.strictEqual(extension.status, 400)
    const noModel = await transcribe({})
    assert.strictEqual(noModel.status, 400)
    const form = new FormData()
    form.append("model", "whisper-1")
    const noFile = await postForm(sim, "/v1/audio/transcriptions", form)
    assert.strictEqual(noFile.status, 400)
    assert.strictEqual(noFile.body.error.param, "file")
    const granularities = await transcribe({ model: "whisper-1", "timestamp_granularities[]": "word" })
    assert.strictEqual(granularities.status, 400)
    const unauthorized = await postForm(sim, "/v1/audio/transcriptions", new FormData(), {})
    assert.strictEqual(unauthorized.status, 401)
  })

  it("records the call and applies fault knobs", async () => {
    sim.setFaults({ status: 500 }, 1)
    const failed = await transcribe({ model: "whisper-1" })
    assert.strictEqual(failed.status, 500)
    const ok = await transcribe({ model: "whisper-1" })
    assert.strictEqual(ok.status, 200)
    assert.strictEqual(sim.calls().at(-1)?.path, "/v1/audio/transcriptions")
  })
})
