/**
 * OpenAI's embeddings API, `POST /v1/embeddings` (docs/api/embeddings-and-audio.md): `input` is a string, up to 2048 strings, an
 * array of token ids or up to 2048 such arrays. `encoding_format: "base64"` — what the official `openai` SDK asks for
 * when its caller does not — answers each vector as little-endian float32 bytes, base64-encoded.
 */
import { quoted } from "../domain/Quoted.ts"
import { Effect } from "effect"
import { Base64 } from "effect/encoding"
import { HttpServerRequest } from "effect/http"
import { EmbeddingsGateway } from "../app/EmbeddingsGateway.ts"
import type { EmbeddingInput, EmbeddingsRequest } from "../plugins/ModelPlugin.ts"
import { type ApiError, badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

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

const readRequest = (fields: Fields) =>
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

// The key is checked before the body is read, so an anonymous client cannot make the gateway parse megabytes.
const embeddings = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* readJson(yield* HttpServerRequest.HttpServerRequest, yield* HttpSettings, "forwarded")
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* badRequest("the request body must be a JSON object")
  }
  const { model, request, format } = yield* readRequest(body as Fields)
  const reply = yield* (yield* EmbeddingsGateway).embed({ model, request, key, requestId: yield* RequestId })
  return json({
    object: "list",
    data: reply.vectors.map((vector, index) => ({
      object: "embedding",
      index,
      embedding: format === "base64" ? float32Base64(vector) : vector
    })),
    model,
    usage: { prompt_tokens: reply.promptTokens, total_tokens: reply.promptTokens }
  })
})

export const layer = route("POST", "/v1/embeddings", embeddings, "openai")
