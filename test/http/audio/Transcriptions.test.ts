/**
 * `POST /v1/audio/transcriptions` through the official `openai` SDK with a real 3-second WAV: every response format
 * (json and verbose_json as OpenAI's schemas, text/srt/vtt as plain text) carrying the simulator's deterministic
 * transcript, subtitles parsed cue by cue (numbering, timestamps, the text), each call held for the measured length
 * and charged 0.0001 USD per audio second; oversized uploads refused with 413 before anything is held (on the
 * declared length and on the bytes received); malformed uploads refused with 400, the upstream's own 400 (garbage
 * bytes) passed through with the hold released.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI, { toFile } from "openai"
import { closeAfterReplay } from "../chat/ChatHarness.ts"
import { assertOpenAiSchema, openAiSchemaErrors, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"
import {
  type AudioHarness,
  assertHolds,
  assertNothingHeld,
  form,
  makeWav,
  post,
  sdk,
  secondsPrice,
  startAudioHarness,
  TRANSCRIBE
} from "./AudioHarness.ts"

let h: AudioHarness
/** The same gateway with a 64 KiB upload limit. */
let small: AudioHarness
const SMALL_LIMIT = 64 * 1024

beforeAll(async () => {
  // The 3 MB spec is parsed once, up front: parsing blocks the event loop long enough to outlive a keep-alive socket.
  openAiSchemaErrors("CreateTranscriptionResponseJson", {})
  h = await startAudioHarness()
  small = await startAudioHarness({ maxAudioBytes: SMALL_LIMIT })
}, 60_000)
afterAll(async () => {
  await closeAfterReplay(small)
  await closeAfterReplay(h)
})

const PATH = "/v1/audio/transcriptions"
const WAV = makeWav(3)
const THREE_SECONDS = secondsPrice(3000)

/**
 * The simulator's transcript of {@link WAV}, fixed by its bytes: a sentence naming the length, then six words picked
 * from the file's SHA-256. 13 words, so subtitles have two cues (the simulator groups up to 12 words per segment).
 */
const TRANSCRIPT = "Simulated transcript of 3.0 seconds of audio: station winter bridge table little river."

interface Cue {
  readonly start: number
  readonly end: number
  readonly text: string
}

/** `HH:MM:SS<sep>mmm` in seconds. */
const seconds = (stamp: string, separator: "," | "."): number => {
  const match = new RegExp(`^(\\d\\d):(\\d\\d):(\\d\\d)\\${separator}(\\d{3})$`).exec(stamp)
  assert.isNotNull(match, `timestamp ${stamp}`)
  const [, h, m, s, ms] = (match as RegExpExecArray).map(Number)
  return (h as number) * 3600 + (m as number) * 60 + (s as number) + (ms as number) / 1000
}

const timing = (line: string | undefined, separator: "," | "."): { start: number; end: number } => {
  const [start, arrow, end, ...rest] = (line ?? "").split(" ")
  assert.strictEqual(arrow, "-->", `timing line: ${line}`)
  assert.deepStrictEqual(rest, [], `timing line: ${line}`)
  return { start: seconds(start ?? "", separator), end: seconds(end ?? "", separator) }
}

/** SRT: blank-line separated cues, each a 1-based sequence number, `start --> end` with commas, then the text. */
const parseSrt = (srt: string): ReadonlyArray<Cue> => {
  const blocks = srt.replace(/\r\n/g, "\n").trim().split(/\n\n/)
  return blocks.map((block, index) => {
    const [number, times, ...text] = block.split("\n")
    assert.strictEqual(number, String(index + 1), "cues are numbered from 1 without gaps")
    assert.isAbove(text.length, 0, `cue ${index + 1} has text`)
    return { ...timing(times, ","), text: text.join(" ") }
  })
}

/** WebVTT: the `WEBVTT` header line, a blank line, then cues of `start --> end` with dots and the text. */
const parseVtt = (vtt: string): ReadonlyArray<Cue> => {
  const normalized = vtt.replace(/\r\n/g, "\n")
  assert.isTrue(normalized.startsWith("WEBVTT\n\n"), `header: ${JSON.stringify(normalized.slice(0, 20))}`)
  const blocks = normalized.slice("WEBVTT\n\n".length).trim().split(/\n\n/)
  return blocks.map((block, index) => {
    const [times, ...text] = block.split("\n")
    assert.isAbove(text.length, 0, `cue ${index + 1} has text`)
    return { ...timing(times, "."), text: text.join(" ") }
  })
}

/** Two cues covering 0 to 3 s back to back, in order, whose texts read the transcript. */
const assertCues = (cues: ReadonlyArray<Cue>) => {
  assert.strictEqual(cues.length, 2)
  assert.strictEqual(cues[0]?.start, 0)
  assert.strictEqual(cues.at(-1)?.end, 3)
  cues.forEach((cue, index) => {
    assert.isBelow(cue.start, cue.end, `cue ${index + 1} has a length`)
    if (index > 0) assert.strictEqual(cue.start, cues[index - 1]?.end, `cue ${index + 1} follows the previous one`)
  })
  assert.strictEqual(cues.map((cue) => cue.text).join(" "), TRANSCRIPT)
}

const wavFile = () => toFile(WAV, "speech.wav", { type: "audio/wav" })

const failureOf = async (promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error
    throw error
  }
  return assert.fail("expected the request to fail")
}

skipWithoutOpenAiSpec()

describe("transcriptions (openai SDK)", () => {
  it("answers json (OpenAI's schema) with the file's deterministic transcript, charged 3 s of audio", async () => {
    const customer = await h.admin.customer()
    const result = await sdk(h, customer.key).audio.transcriptions.create({ model: TRANSCRIBE, file: await wavFile() })
    assert.strictEqual(result.text, TRANSCRIPT)
    assertOpenAiSchema("CreateTranscriptionResponseJson", result)
    await assertHolds(h, customer, TRANSCRIBE, [{ _tag: "Charged", held: THREE_SECONDS, cost: THREE_SECONDS }])
  })

  it("answers verbose_json with words and segments (OpenAI's schema)", async () => {
    const customer = await h.admin.customer()
    const result = await sdk(h, customer.key).audio.transcriptions.create({
      model: TRANSCRIBE,
      file: await wavFile(),
      response_format: "verbose_json",
      timestamp_granularities: ["word", "segment"],
      language: "en",
      temperature: 0.2,
      prompt: "A tone."
    })
    assertOpenAiSchema("CreateTranscriptionResponseVerboseJson", result)
    assert.closeTo(result.duration, 3, 0.01)
    assert.strictEqual(result.text, TRANSCRIPT)
    assert.isAbove(result.words?.length ?? 0, 0)
    assert.isAbove(result.segments?.length ?? 0, 0)
    await assertHolds(h, customer, TRANSCRIBE, [{ _tag: "Charged", held: THREE_SECONDS, cost: THREE_SECONDS }])
  })

  it("answers text (the transcript and a newline), srt (numbered cues) and vtt (WEBVTT cues) as strings, each charged 3 s", async () => {
    const customer = await h.admin.customer()
    const client = sdk(h, customer.key)
    const text = await client.audio.transcriptions.create({
      model: TRANSCRIBE,
      file: await wavFile(),
      response_format: "text"
    })
    // OpenAI writes the text format as the transcript and a newline.
    assert.strictEqual(text, `${TRANSCRIPT}\n`)
    const srt = await client.audio.transcriptions.create({
      model: TRANSCRIBE,
      file: await wavFile(),
      response_format: "srt"
    })
    assert.isString(srt)
    assertCues(parseSrt(srt))
    const vtt = await client.audio.transcriptions.create({
      model: TRANSCRIBE,
      file: await wavFile(),
      response_format: "vtt"
    })
    assert.isString(vtt)
    assertCues(parseVtt(vtt))
    const charged = { _tag: "Charged", held: THREE_SECONDS, cost: THREE_SECONDS } as const
    await assertHolds(h, customer, TRANSCRIBE, [charged, charged, charged])
  })

  it("sends text/srt/vtt as text/plain and json as application/json on the wire, each carrying the transcript", async () => {
    const customer = await h.admin.customer()
    for (const format of ["text", "srt", "vtt", "json", "verbose_json"]) {
      const answer = await post(
        h,
        PATH,
        customer.key,
        form({ bytes: WAV, name: "speech.wav" }, [
          ["model", TRANSCRIBE],
          ["response_format", format]
        ])
      )
      assert.strictEqual(answer.status, 200, answer.text)
      const type = answer.headers.get("content-type") ?? ""
      if (format.includes("json")) {
        assert.match(type, /^application\/json/)
        assert.strictEqual(answer.body.text, TRANSCRIPT)
      } else {
        assert.strictEqual(type, "text/plain; charset=utf-8")
      }
      if (format === "text") assert.strictEqual(answer.text, `${TRANSCRIPT}\n`)
      if (format === "srt") assertCues(parseSrt(answer.text))
      if (format === "vtt") assertCues(parseVtt(answer.text))
      assert.match(answer.headers.get("x-request-id") ?? "", /^req_/)
    }
  })
})

describe("transcription uploads", () => {
  it("refuses a file over the limit with 413 in the OpenAI envelope before holding anything", async () => {
    const customer = await small.admin.customer()
    const big = makeWav(3) // 96 kB of samples > 64 KiB
    const error = await failureOf(
      sdk(small, customer.key).audio.transcriptions.create({
        model: TRANSCRIBE,
        file: await toFile(big, "big.wav", { type: "audio/wav" })
      })
    )
    assert.strictEqual(error.status, 413)
    assert.strictEqual((error.error as { code?: string }).code, "file_too_large")
    // A body far past the limit is refused on its Content-Length alone.
    const huge = await post(
      small,
      PATH,
      customer.key,
      form({ bytes: makeWav(10), name: "huge.wav" }, [["model", TRANSCRIBE]])
    )
    assert.strictEqual(huge.status, 413)
    assert.strictEqual(huge.body.error.type, "invalid_request_error")
    await assertNothingHeld(small, customer)
  })

  it("refuses an oversized upload without a Content-Length on the bytes actually received", async () => {
    const customer = await small.admin.customer()
    for (const seconds of [3, 10]) {
      // 3 s: the body fits the read limit but the file does not; 10 s: the read itself stops at the limit.
      const request = new Request("http://x", {
        method: "POST",
        body: form({ bytes: makeWav(seconds), name: "chunked.wav" }, [["model", TRANSCRIBE]])
      })
      const bytes = new Uint8Array(await request.arrayBuffer())
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let offset = 0; offset < bytes.length; offset += 16 * 1024) {
            controller.enqueue(bytes.subarray(offset, offset + 16 * 1024))
          }
          controller.close()
        }
      })
      const answer = await post(small, PATH, customer.key, chunked, {
        "content-type": request.headers.get("content-type") ?? ""
      })
      assert.strictEqual(answer.status, 413, `${seconds} s: ${answer.text}`)
      assert.strictEqual(answer.body.error.code, "file_too_large")
    }
    // Within the limit the same gateway transcribes (1 s = 32 kB).
    const fits = await post(
      small,
      PATH,
      customer.key,
      form({ bytes: makeWav(1), name: "ok.wav" }, [["model", TRANSCRIBE]])
    )
    assert.strictEqual(fits.status, 200, fits.text)
    await assertHolds(small, customer, TRANSCRIBE, [
      { _tag: "Charged", held: secondsPrice(1000), cost: secondsPrice(1000) }
    ])
  })

  it("refuses malformed uploads with 400 before holding anything", async () => {
    const customer = await h.admin.customer()
    const model: readonly [string, string] = ["model", TRANSCRIBE]
    const noFile = await post(h, PATH, customer.key, form(undefined, [model]))
    assert.strictEqual(noFile.status, 400)
    assert.strictEqual(noFile.body.error.param, "file")
    const empty = await post(h, PATH, customer.key, form({ bytes: new Uint8Array(0), name: "empty.wav" }, [model]))
    assert.strictEqual(empty.status, 400)
    assert.strictEqual(empty.body.error.param, "file")
    const textFile = await post(h, PATH, customer.key, form(undefined, [model, ["file", "not a file"]]))
    assert.strictEqual(textFile.status, 400)
    assert.strictEqual(textFile.body.error.param, "file")
    const extra = form({ bytes: WAV, name: "speech.wav" }, [model])
    extra.append("attachment", new Blob([Uint8Array.from(WAV)]), "other.wav")
    const extraAnswer = await post(h, PATH, customer.key, extra)
    assert.strictEqual(extraAnswer.status, 400)
    assert.strictEqual(extraAnswer.body.error.param, "attachment")
    const noModel = await post(h, PATH, customer.key, form({ bytes: WAV, name: "speech.wav" }, []))
    assert.strictEqual(noModel.status, 400)
    assert.strictEqual(noModel.body.error.param, "model")
    for (const [name, value] of [
      ["response_format", "diarized_xml"],
      ["temperature", "1.5"],
      ["temperature", "warm"],
      ["timestamp_granularities[]", "sentence"]
    ] as const) {
      const answer = await post(h, PATH, customer.key, form({ bytes: WAV, name: "speech.wav" }, [model, [name, value]]))
      assert.strictEqual(answer.status, 400, `${name}=${value}`)
      assert.include(name, answer.body.error.param)
    }
    const granularityWithoutVerbose = await post(
      h,
      PATH,
      customer.key,
      form({ bytes: WAV, name: "speech.wav" }, [model, ["timestamp_granularities[]", "word"]])
    )
    assert.strictEqual(granularityWithoutVerbose.status, 400)
    const json = await post(h, PATH, customer.key, JSON.stringify({ model: TRANSCRIBE }), {
      "content-type": "application/json"
    })
    assert.strictEqual(json.status, 415)
    await assertNothingHeld(h, customer)
  })

  it("passes the upstream's 400 for garbage bytes through and releases the hold", async () => {
    const customer = await h.admin.customer()
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919) % 251)
    const error = await failureOf(
      sdk(h, customer.key).audio.transcriptions.create({
        model: TRANSCRIBE,
        file: await toFile(garbage, "noise.wav", { type: "audio/wav" })
      })
    )
    assert.strictEqual(error.status, 400)
    assert.match(error.message, /corrupted|unsupported/i)
    // Unmeasurable: held for the size's upper bound (4096 bytes at 8 kbps = 4.096 s → 5 whole seconds).
    await assertHolds(h, customer, TRANSCRIBE, [{ _tag: "Released", held: secondsPrice(5000), reasons: ["rejected"] }])
  })

  it("refuses unknown models (404), other kinds (400), models outside the key's list (403), holding nothing", async () => {
    const customer = await h.admin.customer()
    const call = (key: string, model: string) =>
      post(h, PATH, key, form({ bytes: WAV, name: "speech.wav" }, [["model", model]]))
    const unknown = await call(customer.key, "whisper-nope")
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual(unknown.body.error.code, "model_not_found")
    const speech = await call(customer.key, "sim-tts")
    assert.strictEqual(speech.status, 400)
    assert.include(speech.body.error.message, "/v1/audio/speech")
    const chat = await call(customer.key, "sim-openai")
    assert.strictEqual(chat.status, 400)
    assert.include(chat.body.error.message, "/v1/chat/completions")
    const limited = await h.admin.customer({ models: ["sim-tts"] })
    const denied = await call(limited.key, TRANSCRIBE)
    assert.strictEqual(denied.status, 403)
    assert.strictEqual(denied.body.error.code, "model_not_allowed")
    const broke = await h.admin.customer({ deposit: "0" })
    const poor = await call(broke.key, TRANSCRIBE)
    assert.strictEqual(poor.status, 402)
    const anonymous = await call("sk-nope", TRANSCRIBE)
    assert.strictEqual(anonymous.status, 401)
    await assertNothingHeld(h, customer)
    await assertNothingHeld(h, limited)
    await assertNothingHeld(h, broke)
  })
})
