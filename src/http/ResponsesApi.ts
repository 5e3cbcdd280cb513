/**
 * OpenAI's Responses API: `POST /v1/responses` (JSON, SSE, or background), a stored response read, deleted,
 * cancelled, its input items listed, and a request's input tokens counted. The conversation work is
 * `app/responses/ResponsesGateway.ts`; this module checks what the client sent and writes OpenAI's shapes.
 */
import { limitParam } from "./InputLimits.ts"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { ResponsesGateway } from "../app/responses/ResponsesGateway.ts"
import { badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { respondWith } from "./ChatApi.ts"
import { flagProblem, isCount, readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

const MAX_ITEMS_LIMIT = 100

const objectBody = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  // Stored as it is (the conversation is kept): its text is checked the way every stored text is.
  const body = yield* readJson(request, yield* HttpSettings, "stored")
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* badRequest("the request body must be a JSON object")
  }
  return body as Record<string, unknown>
})

/** The fields the gateway reads itself, refused before anything is held; the rest is the converter's to check. */
const shapeProblem = (body: Record<string, unknown>, counting: boolean) => {
  if (!counting && typeof body.model !== "string")
    return badRequest("model: Missing required parameter: 'model'.", "model")
  const input = body.input
  if (input === undefined || input === null) {
    if (!counting || body.previous_response_id === undefined) {
      return badRequest("input: Missing required parameter: 'input'.", "input")
    }
  } else if (typeof input !== "string" && !Array.isArray(input)) {
    return badRequest("input: expected a string or an array of input items", "input")
  }
  for (const flag of ["stream", "store", "background", "parallel_tool_calls"]) {
    const problem = flagProblem(body[flag], flag, true)
    if (problem !== undefined) return problem
  }
  const cap = body.max_output_tokens
  if (cap !== undefined && cap !== null && !isCount(cap, 16)) {
    return badRequest("max_output_tokens: expected an integer of at least 16", "max_output_tokens")
  }
  if (body.include !== undefined && body.include !== null) {
    if (!Array.isArray(body.include) || body.include.some((i) => typeof i !== "string")) {
      return badRequest("include: expected an array of strings", "include")
    }
  }
  if (body.metadata !== undefined && body.metadata !== null) {
    const metadata = body.metadata
    if (typeof metadata !== "object" || Array.isArray(metadata))
      return badRequest("metadata: expected an object", "metadata")
    const entries = Object.entries(metadata)
    if (entries.length > 16) return badRequest("metadata: at most 16 keys", "metadata")
    for (const [key, value] of entries) {
      if (key.length > 64 || typeof value !== "string" || value.length > 512) {
        return badRequest("metadata: keys of at most 64 characters with string values of at most 512", "metadata")
      }
    }
  }
  return undefined
}

const create = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* objectBody
  const problem = shapeProblem(body, false)
  if (problem !== undefined) return yield* problem
  const result = yield* (yield* ResponsesGateway).create({ body, key, requestId: yield* RequestId })
  return yield* respondWith(result)
})

const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")

const query = Effect.map(
  HttpServerRequest.HttpServerRequest,
  (request) => new URL(request.url, "http://x").searchParams
)

const includes = (params: URLSearchParams): ReadonlyArray<string> => [
  ...params.getAll("include"),
  ...params.getAll("include[]")
]

const retrieve = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const params = yield* query
  if (params.get("stream") === "true") {
    return yield* badRequest("stream: replaying a stored response as a stream is not offered; omit stream", "stream")
  }
  return json(yield* (yield* ResponsesGateway).retrieve(key, yield* idParam, includes(params)))
})

const remove = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(yield* (yield* ResponsesGateway).remove(key, yield* idParam))
})

const cancel = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(yield* (yield* ResponsesGateway).cancel(key, yield* idParam))
})

const inputItems = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const params = yield* query
  const limit = yield* limitParam(params, 20, MAX_ITEMS_LIMIT)
  const order = params.get("order") ?? "desc"
  if (order !== "asc" && order !== "desc") return yield* badRequest("order: expected asc or desc", "order")
  const page = yield* (yield* ResponsesGateway).inputItems(key, yield* idParam, {
    order,
    limit,
    after: params.get("after") ?? undefined,
    before: params.get("before") ?? undefined
  })
  return json(page)
})

const inputTokens = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* objectBody
  const problem = shapeProblem(body, true)
  if (problem !== undefined) return yield* problem
  const tokens = yield* (yield* ResponsesGateway).inputTokens(key, body)
  return json({ object: "response.input_tokens", input_tokens: tokens })
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/responses", create, "openai"),
  route("POST", "/v1/responses/input_tokens", inputTokens, "openai"),
  route("GET", "/v1/responses/:id", retrieve, "openai"),
  route("DELETE", "/v1/responses/:id", remove, "openai"),
  route("POST", "/v1/responses/:id/cancel", cancel, "openai"),
  route("GET", "/v1/responses/:id/input_items", inputItems, "openai")
)
