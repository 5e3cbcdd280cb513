/**
 * Anthropic's Message Batches API (docs/api/batches.md), authenticated as `/v1/messages` is (`x-api-key`) and run by
 * the same batch engine as OpenAI's Batch API: `POST /v1/messages/batches` (`requests: [{ custom_id, params }]`, each
 * `params` a Messages API body for any model of the catalog), `GET /v1/messages/batches/{id}`,
 * `GET /v1/messages/batches/{id}/results`, `POST /v1/messages/batches/{id}/cancel` and `GET /v1/messages/batches`
 * (newest first, `before_id`, `after_id`, `limit`) and `DELETE /v1/messages/batches/{id}` (once ended).
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Batches } from "../app/batch/Batches.ts"
import { MAX_BATCH_LINES, MESSAGES_ENDPOINT } from "../domain/batch/BatchInput.ts"
import { apiError, badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { checkJson, limitParam } from "./InputLimits.ts"
import { messageBatchObject, messageBatchResults } from "./MessageBatchView.ts"
import { chatShapeProblem, readJson, requiredFieldProblem } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

/** Anthropic's rule for a request's `custom_id`. */
const CUSTOM_ID = /^[a-zA-Z0-9_-]{1,64}$/

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The requests as Anthropic defines them; the first problem names the request's index and field. */
const readRequests = (body: Record<string, unknown>) => {
  const requests = body.requests
  if (!Array.isArray(requests) || requests.length === 0) {
    return Effect.fail(badRequest("requests: expected a non-empty array", "requests"))
  }
  if (requests.length > MAX_BATCH_LINES) {
    return Effect.fail(badRequest(`requests: at most ${MAX_BATCH_LINES} requests per batch`, "requests"))
  }
  const seen = new Set<string>()
  const read: Array<{ customId: string; params: Record<string, unknown> }> = []
  for (const [index, request] of requests.entries()) {
    const at = `requests.${index}`
    const customId = isRecord(request) ? request.custom_id : undefined
    const named = typeof customId === "string" && CUSTOM_ID.test(customId) ? customId : undefined
    // `requests[3] (custom_id 'b'): requests.3.params.model: …`, `param` the field's path.
    const refuse = (field: string, detail: string) =>
      Effect.fail(
        badRequest(
          `requests[${index}]${named === undefined ? "" : ` (custom_id '${named}')`}: ${field}: ${detail}`,
          field
        )
      )
    if (!isRecord(request)) return refuse(at, "expected an object")
    if (named === undefined) return refuse(`${at}.custom_id`, "expected 1 to 64 letters, digits, '-' or '_'")
    if (seen.has(named)) return refuse(`${at}.custom_id`, `'${named}' is used by an earlier request`)
    seen.add(named)
    if (!isRecord(request.params)) return refuse(`${at}.params`, "expected a Messages API request body")
    if (request.params.stream === true) return refuse(`${at}.params.stream`, "streaming is not available in a batch")
    // The shape checks `POST /v1/messages` makes before planning (ChatApi.ts), named by the request.
    const shape = chatShapeProblem("anthropic", request.params) ?? requiredFieldProblem("messages", request.params)
    if (shape !== undefined) {
      const param = shape.options.param ?? ""
      const detail = shape.message.startsWith(`${param}: `) ? shape.message.slice(param.length + 2) : shape.message
      return refuse(param === "" ? `${at}.params` : `${at}.params.${param}`, detail)
    }
    read.push({ customId: named, params: request.params })
  }
  return Effect.succeed(read)
}

/** Where this gateway was reached, for `results_url`. */
const baseUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  const proto = request.headers["x-forwarded-proto"] === "https" ? "https" : "http"
  return `${proto}://${request.headers.host ?? "localhost"}`
})

const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")

/** The batch, refused as absent unless it is the account's and a message batch. */
const stateOf = Effect.gen(function* () {
  const key = yield* authenticate("anthropic")
  const id = yield* idParam
  const state = yield* (yield* Batches).state(key.accountId, id)
  if (state.endpoint !== MESSAGES_ENDPOINT) {
    return yield* apiError(404, `No message batch found with id '${id.slice(0, 64)}'.`, { code: "not_found" })
  }
  return { key, state }
})

const create = Effect.gen(function* () {
  const key = yield* authenticate("anthropic")
  const request = yield* HttpServerRequest.HttpServerRequest
  const raw = yield* readJson(request, yield* HttpSettings)
  if (!isRecord(raw)) return yield* badRequest("the request body must be a JSON object", null, "invalid_body")
  yield* checkJson(raw, { storable: true })
  const requests = yield* readRequests(raw)
  const state = yield* (yield* Batches).submitMessages({ key, requests, requestId: yield* RequestId })
  return json(messageBatchObject(state, yield* baseUrl))
})

const retrieve = Effect.gen(function* () {
  const { state } = yield* stateOf
  return json(messageBatchObject(state, yield* baseUrl))
})

const results = Effect.gen(function* () {
  const { state } = yield* stateOf
  if (messageBatchObject(state, "").processing_status !== "ended") {
    const message = `Message batch '${state.batchId}' has not ended yet: its results are not ready.`
    return yield* badRequest(message, null, "batch_not_ended")
  }
  return HttpServerResponse.text(messageBatchResults(state), { contentType: "application/binary" })
})

const cancel = Effect.gen(function* () {
  const { key, state } = yield* stateOf
  const batches = yield* Batches
  yield* batches.cancel(key.accountId, state.batchId)
  return json(messageBatchObject(yield* batches.state(key.accountId, state.batchId), yield* baseUrl))
})

/** Only once ended (cancel it first); Anthropic's `message_batch_deleted` object. */
const remove = Effect.gen(function* () {
  const { key, state } = yield* stateOf
  yield* (yield* Batches).delete(key.accountId, state.batchId)
  return json({ id: state.batchId, type: "message_batch_deleted" })
})

const list = Effect.gen(function* () {
  const key = yield* authenticate("anthropic")
  const query = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://x").searchParams
  const limit = yield* limitParam(query, 20, 1000)
  const before = query.get("before_id") ?? undefined
  const after = query.get("after_id") ?? undefined
  if (before !== undefined && after !== undefined) {
    return yield* badRequest("before_id, after_id: give at most one of them", "before_id")
  }
  const batches = yield* Batches
  const endpoint = { is: MESSAGES_ENDPOINT }
  const page = yield* batches.list(key.accountId, { limit, after, before, endpoint })
  // A `before_id` page comes nearest the cursor first: newest first, like every page.
  const rows = before === undefined ? page.rows : [...page.rows].reverse()
  const base = yield* baseUrl
  const data = yield* Effect.forEach(rows, (row) =>
    Effect.map(batches.state(key.accountId, row.id), (state) => messageBatchObject(state, base))
  )
  return json({ data, has_more: page.hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null })
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/messages/batches", create, "anthropic"),
  route("GET", "/v1/messages/batches", list, "anthropic"),
  route("GET", "/v1/messages/batches/:id", retrieve, "anthropic"),
  route("GET", "/v1/messages/batches/:id/results", results, "anthropic"),
  route("POST", "/v1/messages/batches/:id/cancel", cancel, "anthropic"),
  route("DELETE", "/v1/messages/batches/:id", remove, "anthropic")
)
