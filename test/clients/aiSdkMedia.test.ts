/**
 * The Vercel AI SDK's non-chat calls against the real gateway on its built-in simulator: embeddings (OpenAI
 * `/v1/embeddings` and Gemini `:embedContent`/`:batchEmbedContents`), the dedicated image model, a chat-style image
 * model through the Gemini protocol, speech and transcription (of the speech just generated). Each call is
 * charged what the usage it reports implies.
 */
import { createGoogleGenerativeAI } from "@ai-sdk/google"
import { createOpenAI } from "@ai-sdk/openai"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  embed,
  embedMany,
  experimental_generateSpeech as generateSpeech,
  experimental_transcribe as transcribe,
  generateImage,
  generateText
} from "ai"
import { countText } from "../../src/adapters/tokenizer/Tokenizer.ts"
import { costPerMillion } from "../../src/domain/Money.ts"
import { formatMicros } from "../../src/domain/Money.ts"
import { simulatorConfig } from "../../src/adapters/simulator/DefaultCatalog.ts"
import { holdsOf } from "../http/images/ImageHarness.ts"
import {
  type ClientGateway,
  closeClientGateway,
  type Customer,
  startClientGateway,
  waitForSettlement
} from "./ClientGateway.ts"

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 60_000)
afterAll(() => closeClientGateway(h))

const openai = (key: string) => createOpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch })
const google = (key: string) =>
  createGoogleGenerativeAI({ apiKey: key, baseURL: `${h.gateway.url}/v1beta`, fetch: h.fetch })

const pricing = (model: string) => {
  const entry = simulatorConfig("http://sim.invalid", "k").models.find((m) => m.id === model)
  assert.isDefined(entry, `${model} is in the default catalog`)
  return (entry as NonNullable<typeof entry>).pricing
}
const perMillion = (units: number, price: bigint | undefined) => costPerMillion(BigInt(units), price ?? 0n)

/** Asserts the customer's calls were each captured `costs[i]` on `model`, the rest of every hold given back. */
const assertCharged = async (customer: Customer, model: string, costs: ReadonlyArray<bigint>) => {
  await waitForSettlement(h, customer.accountId)
  const holds = await holdsOf(h.admin, customer.accountId)
  assert.strictEqual(holds.length, costs.length, "one hold per call")
  holds.forEach((outcome, index) => {
    assert.strictEqual(outcome.hold.model, model)
    assert.strictEqual(outcome.hold.keyId, customer.keyId)
    assert.strictEqual(outcome.cost, formatMicros(costs[index]), `call ${index}: the charge is the usage's price`)
    assert.strictEqual(outcome.captured, outcome.cost)
  })
  assert.strictEqual((await h.admin.balance(customer.accountId)).held, "0.000000", "no hold left pending")
  return holds
}

const TEXTS = ["The quick brown fox", "jumps over the lazy dog"]

describe("AI SDK embeddings", () => {
  it("embed and embedMany through openai.embedding, charged the tokens they report", async () => {
    const customer = await h.admin.customer()
    const model = openai(customer.key).embedding("sim-embedding")
    const one = await embed({ model, value: TEXTS[0], maxRetries: 0 })
    assert.isAbove(one.embedding.length, 0)
    assert.isTrue(one.embedding.every(Number.isFinite))
    const many = await embedMany({ model, values: TEXTS, maxRetries: 0 })
    assert.strictEqual(many.embeddings.length, 2)
    assert.deepStrictEqual(many.embeddings[0], one.embedding, "the same text, the same vector")
    assert.strictEqual(one.usage.tokens, countText(TEXTS[0]))
    assert.strictEqual(many.usage.tokens, countText(TEXTS[0]) + countText(TEXTS[1]))
    const price = pricing("sim-embedding").input
    await assertCharged(customer, "sim-embedding", [
      perMillion(one.usage.tokens, price),
      perMillion(many.usage.tokens, price)
    ])
  })

  it("embed and embedMany through google.textEmbedding (Gemini :embedContent, :batchEmbedContents)", async () => {
    const customer = await h.admin.customer()
    const model = google(customer.key).textEmbedding("sim-embedding-gemini")
    const one = await embed({ model, value: TEXTS[0], maxRetries: 0 })
    assert.isAbove(one.embedding.length, 0)
    const many = await embedMany({ model, values: TEXTS, maxRetries: 0 })
    assert.strictEqual(many.embeddings.length, 2)
    assert.deepStrictEqual(many.embeddings[0], one.embedding, "the same text, the same vector")
    // Gemini reports no token usage: the gateway bills the inputs' token count.
    const price = pricing("sim-embedding-gemini").input
    await assertCharged(customer, "sim-embedding-gemini", [
      perMillion(countText(TEXTS[0]), price),
      perMillion(countText(TEXTS[0]) + countText(TEXTS[1]), price)
    ])
  })
})

describe("AI SDK images, speech and transcription", () => {
  it("generateImage on the dedicated image model returns a PNG, charged the tokens it reports", async () => {
    const customer = await h.admin.customer()
    const result = await generateImage({
      model: openai(customer.key).image("imggen-2"),
      prompt: "a lighthouse at dusk",
      size: "1024x1024",
      providerOptions: { openai: { quality: "low" } },
      maxRetries: 0
    })
    assert.strictEqual(result.images.length, 1)
    const image = result.images[0]
    assert.strictEqual(image.mediaType, "image/png")
    assert.deepStrictEqual([...image.uint8Array.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], "PNG signature")
    const input = result.usage.inputTokens ?? -1
    const output = result.usage.outputTokens ?? -1
    assert.isAbove(output, 0, "the SDK saw the output image tokens")
    const price = pricing("imggen-2")
    await assertCharged(customer, "imggen-2", [perMillion(input, price.input) + perMillion(output, price.output)])
  })

  it("generateText on a chat-style image model through @ai-sdk/google returns the picture as a file, one flat price", async () => {
    const customer = await h.admin.customer()
    const result = await generateText({
      model: google(customer.key).chat("imgchat-2.5-flash-image"),
      prompt: "Generate an image: a cat on a skateboard",
      maxRetries: 0
    })
    const pictures = result.files.filter((file) => file.mediaType.startsWith("image/"))
    assert.strictEqual(pictures.length, 1, `files: ${JSON.stringify(result.files.map((file) => file.mediaType))}`)
    assert.strictEqual(pictures[0].mediaType, "image/png")
    assert.deepStrictEqual([...pictures[0].uint8Array.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47], "PNG signature")
    await assertCharged(customer, "imgchat-2.5-flash-image", [pricing("imgchat-2.5-flash-image").perCall ?? -1n])
  })

  it("generateSpeech then transcribe the spoken WAV: each charged from the usage it reports", async () => {
    const customer = await h.admin.customer()
    const provider = openai(customer.key)
    const sentence = "Hello from Tollgate!"
    const speech = await generateSpeech({
      model: provider.speech("sim-tts"),
      text: sentence,
      voice: "alloy",
      outputFormat: "wav",
      maxRetries: 0
    })
    const audio = speech.audio.uint8Array
    assert.strictEqual(Buffer.from(audio.subarray(0, 4)).toString("latin1"), "RIFF")
    assert.strictEqual(Buffer.from(audio.subarray(8, 12)).toString("latin1"), "WAVE")

    const transcript = await transcribe({ model: provider.transcription("sim-transcribe"), audio, maxRetries: 0 })
    const seconds = transcript.durationInSeconds ?? -1
    assert.isAbove(seconds, 0, "the SDK saw the audio's duration")
    // The simulator does not recognise speech: its transcript names the length of the audio it decoded.
    assert.match(transcript.text, new RegExp(`^Simulated transcript of ${seconds.toFixed(1)} seconds of audio`))

    const price = pricing("sim-tts")
    const ttsCost = perMillion([...sentence].length, price.perMillionCharacters)
    await waitForSettlement(h, customer.accountId)
    const holds = await holdsOf(h.admin, customer.accountId)
    assert.deepStrictEqual(
      holds.map((outcome) => outcome.hold.model),
      ["sim-tts", "sim-transcribe"]
    )
    assert.strictEqual(holds[0].cost, formatMicros(ttsCost), "speech: characters × the per-character price")
    // Billed per second of audio: the duration the SDK reported, in milliseconds rounded up, at the per-second price.
    const millis = Math.ceil(seconds * 1000 - 1e-6)
    const perSecond = pricing("sim-transcribe").perSecond ?? 0n
    assert.strictEqual(holds[1].cost, formatMicros((BigInt(millis) * perSecond + 999n) / 1000n), "transcription")
    assert.strictEqual((await h.admin.balance(customer.accountId)).held, "0.000000", "no hold left pending")
  })
})
