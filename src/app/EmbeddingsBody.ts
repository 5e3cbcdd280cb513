/**
 * The body of OpenAI's embeddings call, read and answered: `input` in its four shapes, `encoding_format`,
 * `dimensions`, `user`; and the answer (`encoding_format: "base64"` gives each vector as little-endian float32 bytes,
 * base64-encoded). Shared by `POST /v1/embeddings` (http/EmbeddingsApi.ts) and batch lines (app/batch), which must
 * read a line exactly as the endpoint reads a request. A problem names the field, for a 400.
 */
import { Effect, Schema } from "effect"
import { Base64 } from "effect/encoding"
import { quoted } from "../domain/Quoted.ts"
import type { EmbeddingInput, EmbeddingsReply, EmbeddingsRequest } from "../plugins/ModelPlugin.ts"

/** Why a body cannot be read: the message and the field (`input`, `model`, …). */
export class BodyProblem extends Schema.TaggedError<BodyProblem>()("BodyProblem", {
  message: Schema.String,
  param: Schema.NullOr(Schema.String)
}) {}

const badRequest = (message: string, param: string | null = null): BodyProblem => new BodyProblem({ message, param })

type ApiError = BodyProblem

const MAX_INPUTS = 2048

type Fields = Readonly<Record<string, unknown>>

const isTokenId = (value: unknown): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= 0

const tokensInput = (tokens: ReadonlyArray<unknown>, param: string): Effect.Effect<EmbeddingInput, ApiError> => {
  if (tokens.length === 0) return Effect.fail(badRequest(`${param}: a token array must not be empty`, "input"))
  return tokens.every(isTokenId)
    ? Effect.succeed({ _tag: "Tokens", tokens: tokens as ReadonlyArray<number> })
    : Effect.fail(badRequest(`${param}: token ids must be non-negative integers`, "input"))
}

const textInput = (text: string, param: string): Effect.Effect<EmbeddingInput, ApiError> =>
  text === ""
    ? Effect.fail(badRequest(`${param}: must not be an empty string`, "input"))
    : Effect.succeed({ _tag: "Text", text })

/** The four shapes of `input`, each element checked. */
export const readInputs = (input: unknown): Effect.Effect<ReadonlyArray<EmbeddingInput>, ApiError> => {
  if (typeof input === "string") return Effect.map(textInput(input, "input"), (one) => [one])
  if (!Array.isArray(input)) {
    return Effect.fail(
      badRequest("input: expected a string, an array of strings, or an array of token arrays", "input")
    )
  }
  if (input.length === 0) return Effect.fail(badRequest("input: must not be empty", "input"))
  if (input.every((item) => typeof item === "number")) return Effect.map(tokensInput(input, "input"), (one) => [one])
  if (input.length > MAX_INPUTS) {
    return Effect.fail(badRequest(`input: at most ${MAX_INPUTS} inputs per request, got ${input.length}`, "input"))
  }
  return Effect.forEach(input, (item: unknown, index) =>
    typeof item === "string"
      ? textInput(item, `input[${index}]`)
      : Array.isArray(item)
        ? tokensInput(item, `input[${index}]`)
        : Effect.fail(badRequest(`input[${index}]: expected a string or an array of token ids`, "input"))
  )
}

/** Little-endian float32 bytes, base64: what OpenAI answers for `encoding_format: "base64"`. */
export const float32Base64 = (vector: ReadonlyArray<number>): string => {
  const bytes = new Uint8Array(vector.length * 4)
  const view = new DataView(bytes.buffer)
  vector.forEach((value, index) => {
    view.setFloat32(index * 4, value, true)
  })
  return Base64.encode(bytes)
}

export const readEmbeddingsRequest = (fields: Fields) =>
  Effect.gen(function* () {
    const model = fields.model
    if (typeof model !== "string" || model === "") return yield* badRequest("model: is required", "model")
    if (fields.input === undefined || fields.input === null) return yield* badRequest("input: is required", "input")
    const inputs = yield* readInputs(fields.input)
    const format = fields.encoding_format ?? "float"
    if (format !== "float" && format !== "base64") {
      return yield* badRequest(
        `encoding_format: expected 'float' or 'base64', got ${quoted(format)}`,
        "encoding_format"
      )
    }
    const dimensions = fields.dimensions
    if (
      dimensions !== undefined &&
      dimensions !== null &&
      !(typeof dimensions === "number" && Number.isInteger(dimensions) && dimensions > 0)
    ) {
      return yield* badRequest("dimensions: expected a positive integer", "dimensions")
    }
    const user = fields.user
    if (user !== undefined && user !== null && typeof user !== "string") {
      return yield* badRequest("user: expected a string", "user")
    }
    const request: EmbeddingsRequest = {
      inputs,
      dimensions: typeof dimensions === "number" ? dimensions : undefined,
      user: typeof user === "string" ? user : undefined
    }
    return { model, request, format: format as "float" | "base64" }
  })

/** The answer in OpenAI's shape. */
export const embeddingsBody = (reply: EmbeddingsReply, model: string, format: "float" | "base64") => ({
  object: "list",
  data: reply.vectors.map((vector, index) => ({
    object: "embedding",
    index,
    embedding: format === "base64" ? float32Base64(vector) : vector
  })),
  model,
  usage: { prompt_tokens: reply.promptTokens, total_tokens: reply.promptTokens }
})
