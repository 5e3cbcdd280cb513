/**
 * OpenAI's embeddings API, `POST /v1/embeddings` (docs/api/embeddings-and-audio.md): `input` is a string, up to 2048 strings, an
 * array of token ids or up to 2048 such arrays. `encoding_format: "base64"` — what the official `openai` SDK asks for
 * when its caller does not — answers each vector as little-endian float32 bytes, base64-encoded.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { embeddingsBody, readEmbeddingsRequest } from "../app/EmbeddingsBody.ts"
import { EmbeddingsGateway } from "../app/EmbeddingsGateway.ts"
import { badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

// The key is checked before the body is read, so an anonymous client cannot make the gateway parse megabytes.
const embeddings = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* readJson(yield* HttpServerRequest.HttpServerRequest, yield* HttpSettings, "forwarded")
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* badRequest("the request body must be a JSON object")
  }
  const { model, request, format } = yield* readEmbeddingsRequest(body as Readonly<Record<string, unknown>>).pipe(
    Effect.mapError((problem) => badRequest(problem.message, problem.param))
  )
  const reply = yield* (yield* EmbeddingsGateway).embed({ model, request, key, requestId: yield* RequestId })
  return json(embeddingsBody(reply, model, format))
})

export const layer = route("POST", "/v1/embeddings", embeddings, "openai")
