/**
 * Gemini's `POST /v1beta/models/{model}:embedContent` and `:batchEmbedContents`. A content's text is its parts' text
 * joined by newlines, so a one-part content gets the same vector as the same string sent to OpenAI's route with the
 * same dimension. Default dimension 3072 (`gemini-embedding-001`), 768 for `text-embedding-004`/`embedding-001`
 * family names; `outputDimensionality` accepts 1..3072. Gemini reports no token usage here.
 */
import { geminiError } from "../ErrorEnvelopes.ts"
import { arrayField, field, isRecord, stringField } from "../Json.ts"
import { checkGeminiAuth } from "../GeminiGenerate.ts"
import { json, type SimContext, type SimReply, type SimRequest } from "../SimResponse.ts"
import { embeddingVector } from "./EmbeddingVectors.ts"

/** `/v1beta/models/gemini-embedding-001:batchEmbedContents` → model and method. */
export const GEMINI_EMBED_ROUTE = /^\/(?:v1beta|v1alpha|v1)\/models\/([^/:]+):(embedContent|batchEmbedContents)$/

const MAX_DIMENSIONS = 3072
const MAX_BATCH = 100

const defaultDimensions = (model: string): number =>
  model.startsWith("text-embedding-") || model === "embedding-001" ? 768 : 3072

const invalid = (message: string): SimReply => json(400, geminiError(400, message))

const either = (value: unknown, camel: string, snake: string): unknown => field(value, camel) ?? field(value, snake)

const modelName = (value: string): string => (value.startsWith("models/") ? value.slice("models/".length) : value)

/** One request's vector, or the message of its 400. */
const embedOne = (model: string, request: unknown, where: string): ReadonlyArray<number> | string => {
  const requested = stringField(request, "model")
  if (requested !== undefined && modelName(requested) !== model) {
    return `${where}.model: Model names in the request must match the model in the URL (models/${model}).`
  }
  const content = field(request, "content")
  const parts = arrayField(content, "parts")
  if (!isRecord(content) || parts === undefined || parts.length === 0) {
    return `${where}.content.parts: contents.parts must not be empty.`
  }
  const texts = parts.map((part) => stringField(part, "text"))
  if (texts.some((text) => text === undefined)) return `${where}.content.parts: only text parts can be embedded.`
  const text = texts.join("\n")
  if (text.length === 0) return `${where}.content: text content is empty.`
  const rawDimensions = either(request, "outputDimensionality", "output_dimensionality")
  let dimensions = defaultDimensions(model)
  if (rawDimensions !== undefined && rawDimensions !== null) {
    if (typeof rawDimensions !== "number" || !Number.isInteger(rawDimensions) || rawDimensions < 1) {
      return `${where}.output_dimensionality: must be a positive integer.`
    }
    if (rawDimensions > MAX_DIMENSIONS) {
      return `${where}.output_dimensionality: must be at most ${MAX_DIMENSIONS}, got ${rawDimensions}.`
    }
    dimensions = rawDimensions
  }
  return embeddingVector({ _tag: "Text", text }, dimensions)
}

/** `:embedContent` and `:batchEmbedContents`. */
export const geminiEmbed = (
  request: SimRequest,
  context: SimContext,
  model: string,
  method: "embedContent" | "batchEmbedContents"
): SimReply => {
  const unauthorized = checkGeminiAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  if (context.models !== undefined && !context.models.includes(model)) {
    return json(
      404,
      geminiError(404, `models/${model} is not found for API version v1beta, or is not supported for ${method}.`)
    )
  }
  if (request.bodyInvalid || !isRecord(request.body)) {
    return invalid("Invalid JSON payload received. Unexpected token.")
  }
  if (method === "embedContent") {
    const vector = embedOne(model, request.body, "EmbedContentRequest")
    return typeof vector === "string" ? invalid(`* ${vector}`) : json(200, { embedding: { values: vector } })
  }
  const requests = arrayField(request.body, "requests")
  if (requests === undefined || requests.length === 0) {
    return invalid("* BatchEmbedContentsRequest.requests: requests must not be empty.")
  }
  if (requests.length > MAX_BATCH) {
    return invalid(`* BatchEmbedContentsRequest.requests: at most ${MAX_BATCH} requests can be in one batch.`)
  }
  const embeddings: Array<{ readonly values: ReadonlyArray<number> }> = []
  for (const [index, one] of requests.entries()) {
    const vector = embedOne(model, one, `BatchEmbedContentsRequest.requests[${index}]`)
    if (typeof vector === "string") return invalid(`* ${vector}`)
    embeddings.push({ values: vector })
  }
  return json(200, { embeddings })
}
