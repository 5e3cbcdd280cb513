/**
 * OpenAI's Conversations API: `POST/GET/DELETE /v1/conversations[/{id}]` (and `POST /v1/conversations/{id}` to update
 * its metadata), and its items: `POST/GET /v1/conversations/{id}/items`, `GET/DELETE …/items/{item_id}`. The work is
 * `app/responses/Conversations.ts`; this module checks what the client sent and answers in OpenAI's shapes.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { Conversations } from "../app/responses/Conversations.ts"
import type { JsonObject } from "../app/ports/ResponseStore.ts"
import { badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import type { Check } from "./FieldCheck.ts"
import { limitParam } from "./InputLimits.ts"
import { readJson } from "./RequestBody.ts"
import {
  createConversation,
  createConversationItems,
  MAX_ID_LENGTH,
  updateConversation
} from "./dialects/ResponsesRequestSchema.ts"
import { HttpSettings, json, route } from "./Route.ts"

const MAX_ITEMS_LIMIT = 100

/** The body, checked by `check`: a 400 naming the field before anything is stored. */
const checkedBody = (check: Check) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* readJson(request, yield* HttpSettings, "stored")
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return yield* badRequest("the request body must be a JSON object")
    }
    const found = check(body, "")
    if (found !== undefined) return yield* badRequest(found.message, found.param)
    return body as JsonObject
  })

/** Path ids longer than any the gateway makes name nothing of anyone's. */
const pathParam = (name: string) =>
  Effect.map(HttpRouter.params, (params) => (params[name] ?? "").slice(0, MAX_ID_LENGTH + 1))

const items = (body: JsonObject): ReadonlyArray<JsonObject> =>
  Array.isArray(body.items) ? (body.items as ReadonlyArray<JsonObject>) : []

const metadataOf = (body: JsonObject): Readonly<Record<string, string>> =>
  typeof body.metadata === "object" && body.metadata !== null ? (body.metadata as Record<string, string>) : {}

const create = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* checkedBody(createConversation)
  return json(yield* (yield* Conversations).create(key, items(body), metadataOf(body)))
})

const retrieve = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(yield* (yield* Conversations).retrieve(key, yield* pathParam("id")))
})

const update = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* checkedBody(updateConversation)
  return json(yield* (yield* Conversations).update(key, yield* pathParam("id"), metadataOf(body)))
})

const remove = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(yield* (yield* Conversations).remove(key, yield* pathParam("id")))
})

const addItems = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const body = yield* checkedBody(createConversationItems)
  return json(yield* (yield* Conversations).addItems(key, yield* pathParam("id"), items(body)))
})

const listItems = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const request = yield* HttpServerRequest.HttpServerRequest
  const params = new URL(request.url, "http://x").searchParams
  const limit = yield* limitParam(params, 20, MAX_ITEMS_LIMIT)
  const order = params.get("order") ?? "desc"
  if (order !== "asc" && order !== "desc") return yield* badRequest("order: expected asc or desc", "order")
  const after = params.get("after") ?? undefined
  if (after !== undefined && after.length > MAX_ID_LENGTH) {
    return yield* badRequest(`after: at most ${MAX_ID_LENGTH} characters`, "after")
  }
  return json(yield* (yield* Conversations).listItems(key, yield* pathParam("id"), { order, limit, after }))
})

const item = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(yield* (yield* Conversations).item(key, yield* pathParam("id"), yield* pathParam("item_id")))
})

const removeItem = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(yield* (yield* Conversations).removeItem(key, yield* pathParam("id"), yield* pathParam("item_id")))
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/conversations", create, "openai"),
  route("GET", "/v1/conversations/:id", retrieve, "openai"),
  route("POST", "/v1/conversations/:id", update, "openai"),
  route("DELETE", "/v1/conversations/:id", remove, "openai"),
  route("POST", "/v1/conversations/:id/items", addItems, "openai"),
  route("GET", "/v1/conversations/:id/items", listItems, "openai"),
  route("GET", "/v1/conversations/:id/items/:item_id", item, "openai"),
  route("DELETE", "/v1/conversations/:id/items/:item_id", removeItem, "openai")
)
