/**
 * OpenAI's Batch API (docs/api/batches.md): `POST /v1/batches` (`input_file_id`, `endpoint`, `completion_window`,
 * `metadata`), `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`, `GET /v1/batches` (newest first, `after`,
 * `limit`). The batch object is OpenAI's, with `request_counts`, plus our `charge` (what its lines cost so far).
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import { BatchNotFound } from "../app/batch/BatchErrors.ts"
import { Batches } from "../app/batch/Batches.ts"
import type { BatchRow } from "../app/ports/BatchStore.ts"
import { MESSAGES_ENDPOINT } from "../domain/batch/BatchInput.ts"
import { formatMicros } from "../domain/Money.ts"
import { badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { expirySeconds } from "./FilesApi.ts"
import { checkJson, limitParam } from "./InputLimits.ts"
import { readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"
import { listPage } from "../domain/ListPage.ts"

const MAX_METADATA_KEYS = 16
const MAX_METADATA_KEY = 64
const MAX_METADATA_VALUE = 512

const unix = (date: Date | null) => (date === null ? null : Math.floor(date.getTime() / 1000))

export const batchObject = (row: BatchRow) => ({
  id: row.id,
  object: "batch",
  endpoint: row.endpoint,
  errors: row.errors === null ? null : { object: "list", data: [{ code: row.status, message: row.errors.message }] },
  input_file_id: row.input_file_id,
  completion_window: "24h",
  status: row.status,
  output_file_id: row.output_file_id,
  error_file_id: row.error_file_id,
  created_at: unix(row.created_at),
  in_progress_at: unix(row.in_progress_at),
  expires_at: unix(row.expires_at),
  finalizing_at: unix(row.finalizing_at),
  completed_at: unix(row.completed_at),
  failed_at: unix(row.failed_at),
  expired_at: unix(row.expired_at),
  cancelling_at: unix(row.cancelling_at),
  cancelled_at: unix(row.cancelled_at),
  request_counts: { total: row.total, completed: row.completed, failed: row.failed },
  metadata: row.metadata,
  charge: { captured: formatMicros(BigInt(row.cost)) }
})

const stringField = (body: Record<string, unknown>, name: string) =>
  typeof body[name] === "string" && body[name] !== ""
    ? Effect.succeed(body[name] as string)
    : Effect.fail(badRequest(`${name}: is required (a string)`, name))

/** OpenAI's metadata: at most 16 string pairs, keys up to 64 characters, values up to 512. */
const metadataOf = (value: unknown) => {
  if (value === undefined || value === null) return Effect.succeed(null)
  if (typeof value !== "object" || Array.isArray(value)) {
    return Effect.fail(badRequest("metadata: expected an object of string values", "metadata"))
  }
  const entries = Object.entries(value as Record<string, unknown>)
  if (entries.length > MAX_METADATA_KEYS) {
    return Effect.fail(badRequest(`metadata: at most ${MAX_METADATA_KEYS} keys`, "metadata"))
  }
  for (const [key, item] of entries) {
    if (key.length > MAX_METADATA_KEY || typeof item !== "string" || item.length > MAX_METADATA_VALUE) {
      const message = `metadata.${key.slice(0, MAX_METADATA_KEY)}: keys up to ${MAX_METADATA_KEY} characters, string values up to ${MAX_METADATA_VALUE}`
      return Effect.fail(badRequest(message, "metadata"))
    }
  }
  return Effect.succeed(Object.fromEntries(entries) as Record<string, string>)
}

/** OpenAI's `output_expires_after`: how long the batch's output and error files are kept (absent: the operator's). */
const outputExpiry = (value: unknown) => {
  if (value === undefined || value === null) return Effect.succeed(null)
  if (typeof value !== "object" || Array.isArray(value)) {
    return Effect.fail(
      badRequest("output_expires_after: expected an object with anchor and seconds", "output_expires_after")
    )
  }
  const { anchor, seconds } = value as Record<string, unknown>
  return expirySeconds("output_expires_after", anchor, seconds)
}

const create = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const request = yield* HttpServerRequest.HttpServerRequest
  const raw = yield* readJson(request, yield* HttpSettings)
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return yield* badRequest("the request body must be a JSON object", null, "invalid_body")
  }
  const body = raw as Record<string, unknown>
  yield* checkJson(body, { storable: true })
  const row = yield* (yield* Batches).submit({
    key,
    inputFileId: yield* stringField(body, "input_file_id"),
    endpoint: yield* stringField(body, "endpoint"),
    completionWindow: yield* stringField(body, "completion_window"),
    metadata: yield* metadataOf(body.metadata),
    outputExpiresAfterSeconds: yield* outputExpiry(body.output_expires_after),
    requestId: yield* RequestId
  })
  return json(batchObject(row))
})

const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")

/** The account's batch, unless it is a message batch (Anthropic's surface's: MessageBatchesApi.ts). */
const openAiBatch = Effect.fnUntraced(function* (accountId: string, id: string) {
  const row = yield* (yield* Batches).get(accountId, id)
  if (row.endpoint === MESSAGES_ENDPOINT) return yield* new BatchNotFound({ batchId: id })
  return row
})

const retrieve = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(batchObject(yield* openAiBatch(key.accountId, yield* idParam)))
})

const cancel = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const id = yield* idParam
  yield* openAiBatch(key.accountId, id)
  return json(batchObject(yield* (yield* Batches).cancel(key.accountId, id)))
})

const list = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const query = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://x").searchParams
  const limit = yield* limitParam(query, 20, 100)
  // Message batches are Anthropic's surface's (MessageBatchesApi.ts).
  const endpoint = { not: MESSAGES_ENDPOINT }
  const page = yield* (yield* Batches).list(key.accountId, { limit, after: query.get("after") ?? undefined, endpoint })
  const data = page.rows.map(batchObject)
  return json(listPage(data, page.hasMore))
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/batches", create, "openai"),
  route("GET", "/v1/batches", list, "openai"),
  route("GET", "/v1/batches/:id", retrieve, "openai"),
  route("POST", "/v1/batches/:id/cancel", cancel, "openai")
)
