/**
 * OpenAI's Responses API: `POST /v1/responses` (JSON, SSE, or background), a stored response read (a background one's
 * events replayed with `stream=true`), deleted,
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
import { readJson } from "./RequestBody.ts"
import { MAX_ID_LENGTH, responsesBodyProblem } from "./dialects/ResponsesRequestSchema.ts"
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

/** The request checked against OpenAI's `CreateResponse` fields, refused before anything is held. */
const shapeProblem = (body: Record<string, unknown>, counting: boolean) => {
  const found = responsesBodyProblem(body, counting)
  return found === undefined ? undefined : badRequest(found.message, found.param)
}

const create = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* objectBody
  const problem = shapeProblem(body, false)
  if (problem !== undefined) return yield* problem
  const result = yield* (yield* ResponsesGateway).create({ body, key, requestId: yield* RequestId })
  return yield* respondWith(result)
})

/** A path id longer than any the gateway makes is no response of anyone's. */
const idParam = Effect.map(HttpRouter.params, (params) => (params.id ?? "").slice(0, MAX_ID_LENGTH + 1))

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
  const id = yield* idParam
  const gateway = yield* ResponsesGateway
  const stream = params.get("stream")
  if (stream !== null && stream !== "true" && stream !== "false") {
    return yield* badRequest("stream: expected true or false", "stream")
  }
  if (stream !== "true") return json(yield* gateway.retrieve(key, id, includes(params)))
  const after = params.get("starting_after")
  if (after !== null && !/^\d{1,9}$/.test(after)) {
    return yield* badRequest("starting_after: expected a sequence number (a non-negative integer)", "starting_after")
  }
  const frames = yield* gateway.replay(key, id, after === null ? -1 : Number(after), includes(params))
  return yield* respondWith({ _tag: "Stream", frames })
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
