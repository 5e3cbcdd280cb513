/**
 * Token-priced audio models over HTTP, from an operator config against the simulator:
 * - `transcribe-tokens` (`gpt-4o-transcribe` upstream, which reports `{type: "tokens"}` usage: 10 audio tokens per
 *   second plus the prompt's tokens in, the transcript's tokens out) at USD 2.50 in / 10.00 out per 1M tokens: held
 *   for the most the clip can use, charged exactly the reported tokens, in json and in text (asked of the upstream as
 *   json so its usage comes back); srt, which the model does not speak, is the upstream's 400 with the hold released.
 * - `tts-tokens` (`gpt-4o-mini-tts`) at USD 0.60 per 1M input tokens and 12.00 per 1M audio tokens (2 per character):
 *   priced from the input alone, so held and charged the same exact amount.
 * - `tts-mixed`: the same token prices plus USD 15 per 1M characters, all three added.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { toFile } from "openai"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { costPerMillion } from "../../../src/domain/Money.ts"
import { formatMicros } from "../../../src/domain/Money.ts"
import { closeAfterReplay, makeAdmin } from "../chat/ChatHarness.ts"
import { startTestGateway } from "../../support/TestGateway.ts"
import { type AudioHarness, assertHolds, form, makeWav, post, postJson, sdk } from "./AudioHarness.ts"

let h: AudioHarness
let sim: RunningSimulator
let configDir: string

beforeAll(async () => {
  sim = await startSimulator()
  configDir = mkdtempSync(join(tmpdir(), "tollgate-audio-tokens-"))
  const configPath = join(configDir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  sim: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "${sim.apiKey}", timeoutMs: 20000 }
models:
  - { id: transcribe-tokens, plugin: transcription, upstreams: [sim], upstreamModel: gpt-4o-transcribe, pricing: { input: "2.5", output: "10" } }
  - { id: tts-tokens, plugin: speech, upstreams: [sim], upstreamModel: gpt-4o-mini-tts, pricing: { input: "0.6", output: "12" } }
  - { id: tts-mixed, plugin: speech, upstreams: [sim], upstreamModel: gpt-4o-mini-tts, pricing: { perMillionCharacters: "15", input: "0.6", output: "12" } }
`
  )
  const gateway = await startTestGateway({ configPath })
  h = { gateway, admin: makeAdmin(gateway), close: () => gateway.close() }
}, 60_000)
afterAll(async () => {
  await closeAfterReplay(h, sim)
  rmSync(configDir, { recursive: true, force: true })
})

const micros = (tokens: number, perMillion: bigint) => costPerMillion(BigInt(tokens), perMillion)

describe("transcription billed per token", () => {
  const MODEL = "transcribe-tokens"
  const INPUT_PRICE = 2_500_000n
  const OUTPUT_PRICE = 10_000_000n
  const WAV = makeWav(3)
  /** The simulator's transcript of a 3-second WAV (see Transcriptions.test.ts). */
  const TRANSCRIPT = "Simulated transcript of 3.0 seconds of audio: station winter bridge table little river."
  const PROMPT = "A short test clip about rivers."
  /** 10 audio tokens per second of the 3-second clip. */
  const AUDIO_TOKENS = 30

  /** The hold: whole seconds × 10 audio tokens + the prompt in; 64 + 10 per second out (the plugin's bound). */
  const held = (prompt: string) =>
    formatMicros(micros(AUDIO_TOKENS + countText(prompt), INPUT_PRICE) + micros(64 + 30, OUTPUT_PRICE))
  const charge = (input: number, output: number) =>
    formatMicros(micros(input, INPUT_PRICE) + micros(output, OUTPUT_PRICE))

  it("json: the upstream's reported tokens, charged exactly at the input and output prices", async () => {
    const customer = await h.admin.customer()
    const client = sdk(h, customer.key)
    const plain = await client.audio.transcriptions.create({
      model: MODEL,
      file: await toFile(WAV, "speech.wav", { type: "audio/wav" })
    })
    assert.strictEqual(plain.text, TRANSCRIPT)
    const outputTokens = countText(TRANSCRIPT)
    assert.deepInclude(plain.usage as object, {
      type: "tokens",
      input_tokens: AUDIO_TOKENS,
      output_tokens: outputTokens,
      total_tokens: AUDIO_TOKENS + outputTokens
    })
    const prompted = await client.audio.transcriptions.create({
      model: MODEL,
      file: await toFile(WAV, "speech.wav", { type: "audio/wav" }),
      prompt: PROMPT
    })
    const promptTokens = countText(PROMPT)
    assert.deepInclude(prompted.usage as object, {
      type: "tokens",
      input_tokens: AUDIO_TOKENS + promptTokens,
      output_tokens: outputTokens
    })
    const [first, second] = await assertHolds(h, customer, MODEL, [
      { _tag: "Charged", held: held(""), cost: charge(AUDIO_TOKENS, outputTokens) },
      { _tag: "Charged", held: held(PROMPT), cost: charge(AUDIO_TOKENS + promptTokens, outputTokens) }
    ])
    // 30 × 2.50 = 75 µ$ in; the transcript's tokens at 10 µ$ each out.
    assert.strictEqual(first?.cost, formatMicros(75n + BigInt(outputTokens) * 10n))
    assert.deepInclude(second?.usage ?? {}, { inputTokens: AUDIO_TOKENS + promptTokens, outputTokens })
    const balance = await h.admin.balance(customer.accountId)
    assert.strictEqual(
      balance.captured,
      formatMicros(
        micros(AUDIO_TOKENS, INPUT_PRICE) +
          micros(AUDIO_TOKENS + promptTokens, INPUT_PRICE) +
          2n * micros(outputTokens, OUTPUT_PRICE)
      )
    )
  })

  it("text: answered as the transcript and a newline, still billed by the upstream's tokens", async () => {
    const customer = await h.admin.customer()
    const answer = await post(
      h,
      "/v1/audio/transcriptions",
      customer.key,
      form({ bytes: WAV, name: "speech.wav" }, [
        ["model", MODEL],
        ["response_format", "text"]
      ])
    )
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.headers.get("content-type"), "text/plain; charset=utf-8")
    assert.strictEqual(answer.text, `${TRANSCRIPT}\n`)
    await assertHolds(h, customer, MODEL, [
      { _tag: "Charged", held: held(""), cost: charge(AUDIO_TOKENS, countText(TRANSCRIPT)) }
    ])
  })

  it("srt, which the model does not speak: the upstream's 400 passed through, the hold released", async () => {
    const customer = await h.admin.customer()
    const answer = await post(
      h,
      "/v1/audio/transcriptions",
      customer.key,
      form({ bytes: WAV, name: "speech.wav" }, [
        ["model", MODEL],
        ["response_format", "srt"]
      ])
    )
    assert.strictEqual(answer.status, 400, answer.text)
    assert.strictEqual(answer.body.error.type, "invalid_request_error")
    await assertHolds(h, customer, MODEL, [{ _tag: "Released", held: held(""), reasons: ["rejected"] }])
  })
})

describe("speech billed per token", () => {
  const INPUT_PRICE = 600_000n
  const OUTPUT_PRICE = 12_000_000n
  const PER_MILLION_CHARACTERS = 15_000_000n
  /** 33 code points (the emoji is one) in 34 UTF-16 units: billed as 33 characters. */
  const INPUT = "Read this aloud, please: 👋 hello!"
  const characters = [...INPUT].length
  const tokens = countText(INPUT)

  const call = (key: string, model: string) =>
    postJson(h, "/v1/audio/speech", key, { model, input: INPUT, voice: "alloy", response_format: "wav" })

  it("input tokens at the input price, 2 audio tokens per character at the output price: held and charged", async () => {
    assert.strictEqual(characters, 33)
    assert.strictEqual(INPUT.length, 34)
    const customer = await h.admin.customer()
    const answer = await call(customer.key, "tts-tokens")
    assert.strictEqual(answer.status, 200, answer.text)
    assert.strictEqual(answer.headers.get("content-type"), "audio/wav")
    const price = formatMicros(micros(tokens, INPUT_PRICE) + micros(characters * 2, OUTPUT_PRICE))
    // 66 audio tokens × 12 µ$ = 792 µ$, plus the input tokens at 0.6 µ$ each rounded up.
    assert.strictEqual(price, formatMicros(792n + (BigInt(tokens) * 6n + 9n) / 10n))
    const [outcome] = await assertHolds(h, customer, "tts-tokens", [{ _tag: "Charged", held: price, cost: price }])
    assert.deepInclude(outcome?.usage ?? {}, { characters, inputTokens: tokens })
  })

  it("with a character price too, all three prices add up", async () => {
    const customer = await h.admin.customer()
    const answer = await call(customer.key, "tts-mixed")
    assert.strictEqual(answer.status, 200, answer.text)
    const price = formatMicros(
      micros(characters, PER_MILLION_CHARACTERS) + micros(tokens, INPUT_PRICE) + micros(characters * 2, OUTPUT_PRICE)
    )
    await assertHolds(h, customer, "tts-mixed", [{ _tag: "Charged", held: price, cost: price }])
    assert.strictEqual((await h.admin.balance(customer.accountId)).captured, price)
  })
})
