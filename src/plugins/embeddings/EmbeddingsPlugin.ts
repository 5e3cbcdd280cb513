/**
 * The built-in embeddings family (`embeddings`). On an `openai` upstream: `POST /embeddings`, asking for base64 (a
 * quarter of the bytes of decimal floats) and decoding little-endian float32, while still accepting float arrays from
 * upstreams that ignore the format. On a `gemini` upstream: `:batchEmbedContents`, one request per text, in batches
 * of at most 100 (the API's limit), each text with its own `taskType` and `title` when the client gave them (the
 * Gemini embeddings paths); Gemini cannot take token-id inputs and reports no token usage, so such a model
 * answers 400 for token inputs before any call and bills the gateway's count of the texts.
 * Billed per input token: estimate and price are the same rule on the gateway's count and the upstream's.
 */
import { Buffer } from "node:buffer"
import { Effect, Result } from "effect"
import { countText } from "../../adapters/tokenizer/Tokenizer.ts"
import type { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import { GeminiPaths, OpenAiPaths } from "../../adapters/upstream/UpstreamEndpoints.ts"
import type { UpstreamError } from "../../adapters/upstream/UpstreamError.ts"
import { costPerMillion } from "../../domain/Money.ts"
import type { UpstreamConfig, PriceKeys } from "../ModelPlugin.ts"
import {
  type EmbeddingInput,
  type EmbeddingsCall,
  type EmbeddingsPlugin,
  type EmbeddingsReply,
  type EmbeddingsRequest,
  type PluginFailure,
  type PricingRule,
  pluginFailure
} from "../ModelPlugin.ts"
import { upstreamsFor, onUpstream } from "../UpstreamFailure.ts"
import { asArray, asNumber, asRecord, compact } from "../text/convert/json.ts"

export const EMBEDDINGS_PLUGIN_ID = "embeddings"

/** Gemini's `batchEmbedContents` takes at most this many requests per call. */
export const GEMINI_BATCH_LIMIT = 100

/** Batches of one request sent to Gemini at the same time. */
const GEMINI_BATCH_CONCURRENCY = 4

/** The gateway's count of the inputs: the tokenizer for texts, the length for token-id arrays. */
export const countEmbeddingInputs = (inputs: ReadonlyArray<EmbeddingInput>): number =>
  inputs.reduce((sum, input) => sum + (input._tag === "Text" ? countText(input.text) : input.tokens.length), 0)

export const embeddingsPricing: PricingRule<
  { readonly request: EmbeddingsRequest; readonly inputTokens: number },
  { readonly promptTokens: number }
> = {
  estimate: ({ inputTokens }, model) => costPerMillion(BigInt(inputTokens), model.pricing.input ?? 0n),
  price: ({ promptTokens }, model) => costPerMillion(BigInt(promptTokens), model.pricing.input ?? 0n)
}

/** Little-endian float32 values, base64-encoded (OpenAI's `encoding_format: "base64"`); undefined when not that. */
export const decodeBase64Floats = (text: string): ReadonlyArray<number> | undefined => {
  const bytes = Buffer.from(text, "base64")
  if (bytes.byteLength % 4 !== 0) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const values = new Array<number>(bytes.byteLength / 4)
  for (let i = 0; i < values.length; i++) values[i] = view.getFloat32(i * 4, true)
  return values
}

const isFloatArray = (value: unknown): value is ReadonlyArray<number> =>
  Array.isArray(value) && value.every((item) => typeof item === "number" && Number.isFinite(item))

const malformed = (what: string): PluginFailure =>
  pluginFailure("unavailable", `the upstream sent a malformed response: ${what}`)

/** `input` in OpenAI's shapes: strings, or arrays of token ids; one request cannot mix the two. */
export const openAiInput = (
  inputs: ReadonlyArray<EmbeddingInput>
): ReadonlyArray<string> | ReadonlyArray<ReadonlyArray<number>> | PluginFailure => {
  if (inputs.length === 0)
    return pluginFailure("invalid_request", "input: at least one input is required", { param: "input" })
  const texts: Array<string> = []
  const tokens: Array<ReadonlyArray<number>> = []
  for (const input of inputs) {
    if (input._tag === "Text") texts.push(input.text)
    else tokens.push(input.tokens)
  }
  if (texts.length > 0 && tokens.length > 0) {
    return pluginFailure("invalid_request", "input: strings and token arrays cannot be mixed in one request", {
      param: "input"
    })
  }
  return texts.length > 0 ? texts : tokens
}

export const openAiEmbeddingsBody = (call: EmbeddingsCall, input: ReadonlyArray<unknown>): Record<string, unknown> =>
  compact({
    model: call.model.upstreamModel,
    input,
    dimensions: call.request.dimensions,
    encoding_format: "base64",
    user: call.request.user
  })

/** The vectors of an OpenAI reply in input order, or why the reply cannot be used. */
export const openAiVectors = (
  body: unknown,
  expected: number
): ReadonlyArray<ReadonlyArray<number>> | PluginFailure => {
  const data = asArray(asRecord(body).data)
  if (data.length !== expected) return malformed(`${data.length} embeddings for ${expected} inputs`)
  const vectors = new Array<ReadonlyArray<number> | undefined>(expected)
  for (const [position, item] of data.entries()) {
    const record = asRecord(item)
    const index = record.index === undefined ? position : asNumber(record.index)
    if (index === undefined || !Number.isInteger(index) || index < 0 || index >= expected || vectors[index]) {
      return malformed("embedding indexes do not match the inputs")
    }
    const embedding = record.embedding
    const vector =
      typeof embedding === "string" ? decodeBase64Floats(embedding) : isFloatArray(embedding) ? embedding : undefined
    if (vector === undefined) return malformed("an embedding is neither base64 float32 nor a number array")
    vectors[index] = vector
  }
  return vectors as ReadonlyArray<ReadonlyArray<number>>
}

type TextInput = Extract<EmbeddingInput, { readonly _tag: "Text" }>

export const geminiBatchBody = (
  call: EmbeddingsCall,
  texts: ReadonlyArray<TextInput>
): { readonly requests: ReadonlyArray<Record<string, unknown>> } => ({
  requests: texts.map((input) =>
    compact({
      model: `models/${call.model.upstreamModel}`,
      content: { parts: [{ text: input.text }] },
      outputDimensionality: call.request.dimensions,
      taskType: input.taskType,
      title: input.title
    })
  )
})

export const geminiVectors = (
  body: unknown,
  expected: number
): ReadonlyArray<ReadonlyArray<number>> | PluginFailure => {
  const embeddings = asArray(asRecord(body).embeddings)
  if (embeddings.length !== expected) return malformed(`${embeddings.length} embeddings for ${expected} inputs`)
  const vectors: Array<ReadonlyArray<number>> = []
  for (const embedding of embeddings) {
    const values = asRecord(embedding).values
    if (!isFloatArray(values)) return malformed("an embedding has no number values")
    vectors.push(values)
  }
  return vectors
}

const isFailure = <A>(value: A | PluginFailure): value is PluginFailure =>
  typeof value === "object" && value !== null && "_tag" in value && value._tag === "PluginFailure"

const fromResult = <A>(value: A | PluginFailure): Effect.Effect<A, PluginFailure> =>
  isFailure(value) ? Effect.fail(value) : Effect.succeed(value)

/** The upstream body of an embeddings call to an OpenAI upstream (interactive, or a vendor batch line), or why not. */
export const openAiEmbeddingsRequest = (
  call: EmbeddingsCall
): Result.Result<Record<string, unknown>, PluginFailure> => {
  const input = openAiInput(call.request.inputs)
  return isFailure(input) ? Result.fail(input) : Result.succeed(openAiEmbeddingsBody(call, input))
}

/**
 * The input tokens an OpenAI embeddings reply reports, rounded up; undefined when it reports none, or 0 as some
 * OpenAI-compatible upstreams do: the gateway's count is billed then, never nothing.
 */
export const reportedPromptTokens = (body: unknown): number | undefined => {
  const reported = asNumber(asRecord(asRecord(body).usage).prompt_tokens)
  return reported === undefined || reported <= 0 ? undefined : Math.ceil(reported)
}

const chunked = <A>(items: ReadonlyArray<A>, size: number): ReadonlyArray<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/** The prices this family bills by (the operator config may set no others). */
/** `batchInput`: the input price of batch lines (app/batch/BatchPricing.ts); interactive calls never read it. */
export const EMBEDDINGS_PRICE_KEYS: PriceKeys = { allowed: ["input", "batchInput"], required: ["input"] }

export const makeEmbeddingsPlugin = (client: UpstreamClient["Service"]): EmbeddingsPlugin => {
  const post = (call: EmbeddingsCall, upstream: UpstreamConfig, path: string, body: unknown) =>
    client
      .request({
        upstream,
        method: "POST",
        path,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: call.signal
      })
      .pipe(Effect.flatMap((response) => response.body.json))

  const openAi = (
    call: EmbeddingsCall,
    upstream: UpstreamConfig,
    input: ReadonlyArray<unknown>
  ): Effect.Effect<EmbeddingsReply, UpstreamError | PluginFailure> =>
    Effect.gen(function* () {
      const body = yield* post(call, upstream, OpenAiPaths.embeddings, openAiEmbeddingsBody(call, input))
      const vectors = yield* fromResult(openAiVectors(body, input.length))
      return {
        vectors,
        promptTokens: reportedPromptTokens(body) ?? call.inputTokens ?? countEmbeddingInputs(call.request.inputs)
      }
    })

  const gemini = (
    call: EmbeddingsCall,
    upstream: UpstreamConfig,
    texts: ReadonlyArray<TextInput>
  ): Effect.Effect<EmbeddingsReply, UpstreamError | PluginFailure> =>
    Effect.gen(function* () {
      const batches = yield* Effect.forEach(
        chunked(texts, GEMINI_BATCH_LIMIT),
        (batch) =>
          Effect.flatMap(
            post(
              call,
              upstream,
              GeminiPaths.batchEmbedContents(call.model.upstreamModel),
              geminiBatchBody(call, batch)
            ),
            (body) => fromResult(geminiVectors(body, batch.length))
          ),
        { concurrency: GEMINI_BATCH_CONCURRENCY }
      )
      // Gemini reports no usage for embeddings: the gateway's count, the one the hold was placed from, is billed.
      return {
        vectors: batches.flat(),
        promptTokens: call.inputTokens ?? countEmbeddingInputs(call.request.inputs)
      }
    })

  const embed = (call: EmbeddingsCall): Effect.Effect<EmbeddingsReply, PluginFailure> =>
    Effect.gen(function* () {
      const { inputs } = call.request
      const input = openAiInput(inputs)
      if (isFailure(input)) return yield* Effect.fail(input)
      const texts = inputs.flatMap((one) => (one._tag === "Text" ? [one] : []))
      const hasTokens = texts.length < inputs.length
      const callable = upstreamsFor(call.model, ["openai", "gemini"])
      const upstreams = hasTokens ? callable.filter((upstream) => upstream.protocol !== "gemini") : callable
      if (hasTokens && upstreams.length === 0 && callable.length > 0) {
        return yield* Effect.fail(
          pluginFailure(
            "invalid_request",
            `input: model ${call.model.id} takes text only; token-id arrays cannot be embedded by it`
          )
        )
      }
      return yield* onUpstream(call.model, upstreams, "embeddings", (upstream) =>
        upstream.protocol === "gemini" ? gemini(call, upstream, texts) : openAi(call, upstream, input)
      )
    })

  return {
    specificationVersion: "v1",
    id: EMBEDDINGS_PLUGIN_ID,
    family: "embeddings",
    kind: "embeddings",
    pricingKeys: EMBEDDINGS_PRICE_KEYS,
    pricing: embeddingsPricing,
    embed
  }
}
