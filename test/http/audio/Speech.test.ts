/**
 * `POST /v1/audio/speech` through the official `openai` SDK: real audio streamed through with the upstream's content
 * type, every format decoded (mp3, opus, aac and flac by ffprobe, each 60 ms of audio per character; pcm by its byte
 * length; wav by its RIFF header), each call charged exactly its characters at 15 USD per 1M; a client that
 * disconnects mid-stream still pays for the call; an upstream that fails before the first byte costs nothing; and
 * malformed requests, unknown models, other kinds and keys without the model are refused before any hold.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { decodedSeconds } from "../../adapters/simulator/audio/AudioHttp.ts"
import { closeAfterReplay, makeAdmin } from "../chat/ChatHarness.ts"
import { startTestGateway } from "../../support/TestGateway.ts"
import { postRaw } from "../../support/Trailers.ts"
import {
  type AudioHarness,
  assertHolds,
  assertNothingHeld,
  charactersPrice,
  postJson,
  probeAudio,
  sdk,
  startAudioHarness,
  TTS
} from "./AudioHarness.ts"

let h: AudioHarness
/** A gateway whose `tts-controlled` model speaks to a simulator this suite sets faults on. */
let f: AudioHarness
let sim: RunningSimulator
let configDir: string

beforeAll(async () => {
  h = await startAudioHarness()
  sim = await startSimulator()
  configDir = mkdtempSync(join(tmpdir(), "tollgate-speech-"))
  const configPath = join(configDir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  sim: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "${sim.apiKey}", timeoutMs: 20000 }
models:
  - { id: tts-controlled, plugin: speech, upstreams: [sim], upstreamModel: tts-1, pricing: { perMillionCharacters: "15" } }
`
  )
  const gateway = await startTestGateway({ configPath })
  f = { gateway, admin: makeAdmin(gateway), close: () => gateway.close() }
}, 60_000)
afterAll(async () => {
  await closeAfterReplay(f, sim)
  rmSync(configDir, { recursive: true, force: true })
  await closeAfterReplay(h)
})

const PATH = "/v1/audio/speech"
const INPUT = "Hello from Tollgate, the gateway that bills every character."
const characters = (text: string) => [...text].length

const failureOf = async (promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error
    throw error
  }
  return assert.fail("expected the request to fail")
}

describe("speech (openai SDK)", () => {
  for (const [format, contentType, codec] of [
    ["mp3", "audio/mpeg", "mp3"],
    ["wav", "audio/wav", "pcm_s16le"]
  ] as const) {
    it(`streams real ${format} audio, charged its characters`, async () => {
      const customer = await h.admin.customer()
      const response = await sdk(h, customer.key).audio.speech.create({
        model: TTS,
        input: INPUT,
        voice: "alloy",
        response_format: format
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers.get("content-type"), contentType)
      assert.match(response.headers.get("x-request-id") ?? "", /^req_/)
      // Saved to a file and decoded by ffprobe.
      const bytes = new Uint8Array(await response.arrayBuffer())
      const probe = await probeAudio(bytes, format)
      assert.strictEqual(probe.codec, codec)
      assert.isAbove(probe.durationSeconds, 0)
      const price = charactersPrice(characters(INPUT))
      await assertHolds(h, customer, TTS, [{ _tag: "Charged", held: price, cost: price }])
    })
  }

  it("says what the audio cost in HTTP trailers, the ledger's charge", async () => {
    const customer = await h.admin.customer()
    const reply = await postRaw(
      `${h.gateway.url}${PATH}`,
      { authorization: `Bearer ${customer.key}` },
      { model: TTS, input: INPUT, voice: "alloy", response_format: "pcm" }
    )
    assert.strictEqual(reply.status, 200)
    assert.strictEqual(reply.headers.trailer, "x-tollgate-cost, x-tollgate-balance")
    const price = charactersPrice(characters(INPUT))
    await assertHolds(h, customer, TTS, [{ _tag: "Charged", held: price, cost: price }])
    assert.strictEqual(reply.trailers["x-tollgate-cost"], price)
  })

  it("takes every option: a voice object, speed, instructions, and the other formats", async () => {
    const customer = await h.admin.customer()
    const client = sdk(h, customer.key)
    const types: Array<string | null> = []
    for (const format of ["opus", "aac", "flac", "pcm"] as const) {
      const response = await client.audio.speech.create({
        model: TTS,
        input: "Short.",
        voice: { id: "coral" } as never,
        response_format: format,
        speed: 1.5,
        instructions: "Cheerful."
      })
      types.push(response.headers.get("content-type"))
      assert.isAbove((await response.arrayBuffer()).byteLength, 0, format)
    }
    assert.deepStrictEqual(types, ["audio/ogg", "audio/aac", "audio/flac", "audio/pcm"])
    const price = charactersPrice(characters("Short."))
    const charged = { _tag: "Charged", held: price, cost: price } as const
    await assertHolds(h, customer, TTS, [charged, charged, charged, charged])
  })

  it("charges a client that disconnects mid-stream for the whole call", async () => {
    const customer = await f.admin.customer()
    const input = "A long reading. ".repeat(256).slice(0, 4096)
    const abort = new AbortController()
    const response = await fetch(`${f.gateway.url}${PATH}`, {
      method: "POST",
      headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "tts-controlled", input, voice: "nova" }),
      signal: abort.signal
    })
    assert.strictEqual(response.status, 200)
    const reader = response.body?.getReader()
    const first = await reader?.read()
    assert.isAbove(first?.value?.length ?? 0, 0, "the first bytes arrived")
    abort.abort()
    const price = charactersPrice(4096)
    const [outcome] = await assertHolds(f, customer, "tts-controlled", [{ _tag: "Charged", held: price, cost: price }])
    assert.strictEqual(outcome?.usage?.completed, false, "settled when the client went away, not at the end")
  })

  it("releases the hold when the upstream fails before the first byte, charging nothing", async () => {
    const customer = await f.admin.customer()
    sim.setFaults({ status: 500 }, 10)
    try {
      const error = await failureOf(
        sdk(f, customer.key).audio.speech.create({ model: "tts-controlled", input: INPUT, voice: "alloy" })
      )
      assert.isAtLeast(error.status ?? 0, 500)
    } finally {
      sim.clearFaults()
    }
    await assertHolds(f, customer, "tts-controlled", [
      { _tag: "Released", held: charactersPrice(characters(INPUT)), reasons: ["failed"] }
    ])
  })

  it("passes the upstream's refusal through as a 400 and releases the hold", async () => {
    const customer = await f.admin.customer()
    const answer = await postJson(f, PATH, customer.key, {
      model: "tts-controlled",
      input: INPUT,
      voice: "not-a-voice"
    })
    assert.strictEqual(answer.status, 400, answer.text)
    assert.strictEqual(answer.body.error.type, "invalid_request_error")
    await assertHolds(f, customer, "tts-controlled", [
      { _tag: "Released", held: charactersPrice(characters(INPUT)), reasons: ["rejected"] }
    ])
  })

  it("refuses malformed requests with a 400 naming the field, holding nothing", async () => {
    const customer = await h.admin.customer()
    const base = { model: TTS, input: "Hi", voice: "alloy" }
    const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
      [{ ...base, input: "" }, "input"],
      [{ ...base, input: undefined }, "input"],
      [{ ...base, input: "x".repeat(4097) }, "input"],
      [{ ...base, voice: undefined }, "voice"],
      [{ ...base, voice: { name: "alloy" } }, "voice"],
      [{ ...base, response_format: "ogg" }, "response_format"],
      [{ ...base, speed: 0.1 }, "speed"],
      [{ ...base, speed: 5 }, "speed"],
      [{ ...base, stream_format: "sse" }, "stream_format"],
      [{ ...base, model: undefined }, "model"]
    ]
    for (const [body, param] of cases) {
      const answer = await postJson(h, PATH, customer.key, body)
      assert.strictEqual(answer.status, 400, `${param}: ${answer.text}`)
      assert.strictEqual(answer.body.error.param, param)
    }
    await assertNothingHeld(h, customer)
  })

  it("refuses unknown models (404), other kinds (400), models outside the key's list (403), holding nothing", async () => {
    const customer = await h.admin.customer()
    const call = (key: string, model: string) => postJson(h, PATH, key, { model, input: "Hi", voice: "alloy" })
    const unknown = await call(customer.key, "tts-nope")
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual(unknown.body.error.code, "model_not_found")
    const transcribe = await call(customer.key, "sim-transcribe")
    assert.strictEqual(transcribe.status, 400)
    assert.include(transcribe.body.error.message, "/v1/audio/transcriptions")
    const embedding = await call(customer.key, "sim-embedding")
    assert.strictEqual(embedding.status, 400)
    assert.include(embedding.body.error.message, "/v1/embeddings")
    const limited = await h.admin.customer({ models: ["sim-transcribe"] })
    const denied = await call(limited.key, TTS)
    assert.strictEqual(denied.status, 403)
    assert.strictEqual(denied.body.error.code, "model_not_allowed")
    const broke = await h.admin.customer({ deposit: "0" })
    const poor = await call(broke.key, TTS)
    assert.strictEqual(poor.status, 402)
    await assertNothingHeld(h, customer)
    await assertNothingHeld(h, limited)
    await assertNothingHeld(h, broke)
  })
})

/** The simulator speaks 60 ms per character at speed 1 (at least half a second), as 24 kHz signed 16-bit mono. */
const SAMPLE_RATE = 24_000
const expectedSeconds = (text: string, speed = 1) => Math.max(0.5, (characters(text) * 0.06) / speed)
/** 414 characters: about 25 s of audio, seven times {@link INPUT}. */
const LONG = "Every character of this sentence becomes sixty milliseconds of tone. ".repeat(6)

/** A call charged exactly `input`'s characters, the hold being the charge. */
const charged = (input: string) => {
  const price = charactersPrice(characters(input))
  return { _tag: "Charged", held: price, cost: price } as const
}

const speak = async (key: string, input: string, format: string, speed?: number): Promise<Uint8Array> => {
  const answer = await fetch(`${h.gateway.url}${PATH}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: TTS, input, voice: "alloy", response_format: format, ...(speed ? { speed } : {}) })
  })
  const bytes = new Uint8Array(await answer.arrayBuffer())
  assert.strictEqual(answer.status, 200, `${format}: ${Buffer.from(bytes).toString("utf8", 0, 200)}`)
  return bytes
}

interface Wav {
  readonly format: number
  readonly channels: number
  readonly sampleRate: number
  readonly byteRate: number
  readonly blockAlign: number
  readonly bitsPerSample: number
  readonly data: Buffer
}

/** A RIFF/WAVE file read chunk by chunk: its `fmt ` fields and its `data` bytes. */
const parseWav = (bytes: Uint8Array): Wav => {
  const buffer = Buffer.from(bytes)
  assert.strictEqual(buffer.toString("ascii", 0, 4), "RIFF")
  assert.strictEqual(buffer.readUInt32LE(4), buffer.length - 8, "the RIFF size is the rest of the file")
  assert.strictEqual(buffer.toString("ascii", 8, 12), "WAVE")
  let fmt: Omit<Wav, "data"> | undefined
  let data: Buffer | undefined
  for (let offset = 12; offset + 8 <= buffer.length; ) {
    const id = buffer.toString("ascii", offset, offset + 4)
    const size = buffer.readUInt32LE(offset + 4)
    const body = offset + 8
    assert.isAtMost(body + size, buffer.length, `chunk '${id}' fits the file`)
    if (id === "fmt ") {
      fmt = {
        format: buffer.readUInt16LE(body),
        channels: buffer.readUInt16LE(body + 2),
        sampleRate: buffer.readUInt32LE(body + 4),
        byteRate: buffer.readUInt32LE(body + 8),
        blockAlign: buffer.readUInt16LE(body + 12),
        bitsPerSample: buffer.readUInt16LE(body + 14)
      }
    } else if (id === "data") {
      data = buffer.subarray(body, body + size)
    }
    offset = body + size + (size % 2)
  }
  assert.isDefined(fmt, "a fmt chunk")
  assert.isDefined(data, "a data chunk")
  return { ...(fmt as Omit<Wav, "data">), data: data as Buffer }
}

describe("speech audio, decoded", () => {
  for (const [format, codec] of [
    ["opus", "opus"],
    ["aac", "aac"],
    ["flac", "flac"]
  ] as const) {
    it(`${format}: ffprobe reads ${codec} audio whose decoded length is 60 ms per character, charged its characters`, async () => {
      const customer = await h.admin.customer()
      const lengths: Array<number> = []
      for (const input of [INPUT, LONG]) {
        const bytes = await speak(customer.key, input, format)
        const extension = format === "opus" ? "ogg" : format
        const probe = await probeAudio(bytes, extension)
        assert.strictEqual(probe.codec, codec)
        assert.strictEqual(probe.channels, 1)
        // Every packet decoded, not estimated from the bitrate; AAC pads to whole 1024-sample frames and primes.
        const seconds = await decodedSeconds(bytes, extension)
        assert.closeTo(seconds, expectedSeconds(input), 0.1, `${format}, ${characters(input)} characters`)
        lengths.push(seconds)
      }
      assert.closeTo(
        (lengths[1] as number) / (lengths[0] as number),
        characters(LONG) / characters(INPUT),
        0.2,
        "the length is proportional to the input"
      )
      await assertHolds(h, customer, TTS, [charged(INPUT), charged(LONG)])
    })
  }

  it("pcm: raw 24 kHz 16-bit mono, 48000 bytes per second of speech, speed shortening it", async () => {
    const customer = await h.admin.customer()
    for (const [input, speed] of [
      [INPUT, undefined],
      [LONG, undefined],
      [INPUT, 2],
      ["Hi.", undefined]
    ] as const) {
      const bytes = await speak(customer.key, input, "pcm", speed)
      const label = `${characters(input)} characters at speed ${speed ?? 1}`
      assert.strictEqual(bytes.length % 2, 0, `${label}: whole 16-bit samples`)
      assert.closeTo(bytes.length, SAMPLE_RATE * 2 * expectedSeconds(input, speed), SAMPLE_RATE * 2 * 0.001, label)
    }
    const probe = await probeAudio(await speak(customer.key, INPUT, "pcm"), "pcm", true)
    assert.strictEqual(probe.codec, "pcm_s16le")
    assert.closeTo(probe.durationSeconds, expectedSeconds(INPUT), 0.001)
    await assertHolds(h, customer, TTS, [charged(INPUT), charged(LONG), charged(INPUT), charged("Hi."), charged(INPUT)])
  })

  it("wav: a RIFF header of 16-bit mono PCM at 24 kHz whose sample count matches the duration, the samples of pcm", async () => {
    const customer = await h.admin.customer()
    for (const input of [INPUT, LONG]) {
      const wav = parseWav(await speak(customer.key, input, "wav"))
      assert.deepInclude(wav, {
        format: 1,
        channels: 1,
        sampleRate: SAMPLE_RATE,
        byteRate: SAMPLE_RATE * 2,
        blockAlign: 2,
        bitsPerSample: 16
      })
      assert.strictEqual(wav.data.length % 2, 0)
      const samples = wav.data.length / 2
      assert.closeTo(samples, SAMPLE_RATE * expectedSeconds(input), SAMPLE_RATE * 0.001, `${characters(input)} chars`)
      // The same call as pcm is the same samples without the header.
      const pcm = await speak(customer.key, input, "pcm")
      assert.isTrue(Buffer.from(pcm).equals(wav.data), "wav data equals the pcm answer")
    }
    await assertHolds(h, customer, TTS, [charged(INPUT), charged(INPUT), charged(LONG), charged(LONG)])
  })
})
