/**
 * OpenAI's Files API for batches (docs/api/batches.md): `POST /v1/files` (multipart as the official SDKs send it:
 * `file` and `purpose`, only `batch` taken), `GET /v1/files`, `GET /v1/files/{id}`, `GET /v1/files/{id}/content`,
 * `DELETE /v1/files/{id}`. A file belongs to its account: any other key gets 404. Batch input is JSONL text, so a
 * file must be UTF-8 and storable (no NUL); its lines are checked when a batch names it.
 */
import { Effect, Layer, Result } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Batches } from "../app/batch/Batches.ts"
import type { FileRow } from "../app/ports/BatchStore.ts"
import { storableTextProblem } from "../domain/StorableText.ts"
import { apiError, badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { limitParam } from "./InputLimits.ts"
import { parseFormData, readBytes } from "./RequestBody.ts"
import { HttpSettings, json, route } from "./Route.ts"
import { listPage } from "../domain/ListPage.ts"

/** OpenAI's own limit on a batch input file. */
export const MAX_BATCH_FILE_BYTES = 200 * 1024 * 1024
const MULTIPART_SLACK_BYTES = 64 * 1024
const MAX_FILENAME = 255

const unix = (date: Date) => Math.floor(date.getTime() / 1000)

export const fileObject = (row: FileRow) => ({
  id: row.id,
  object: "file",
  bytes: row.bytes,
  created_at: unix(row.created_at),
  expires_at: row.expires_at === null ? null : unix(row.expires_at),
  filename: row.filename,
  purpose: row.purpose,
  status: "processed",
  status_details: null
})

/** OpenAI's bounds on a file's own retention (`expires_after.seconds`): an hour to 30 days. */
const MIN_EXPIRY_SECONDS = 3_600
const MAX_EXPIRY_SECONDS = 2_592_000

/**
 * OpenAI's file expiration policy (`expires_after` of an upload, `output_expires_after` of a batch): `anchor`
 * `created_at` and `seconds` in bounds; `seconds` may come as a multipart field's text.
 */
export const expirySeconds = (field: string, anchor: unknown, seconds: unknown) => {
  if (anchor !== "created_at")
    return Effect.fail(badRequest(`${field}.anchor: expected 'created_at'`, `${field}.anchor`))
  const value = typeof seconds === "string" && /^\d{1,8}$/.test(seconds) ? Number(seconds) : seconds
  if (
    typeof value !== "number" ||
    !Number.isInteger(value) ||
    value < MIN_EXPIRY_SECONDS ||
    value > MAX_EXPIRY_SECONDS
  ) {
    const message = `${field}.seconds: expected an integer from ${MIN_EXPIRY_SECONDS} to ${MAX_EXPIRY_SECONDS}`
    return Effect.fail(badRequest(message, `${field}.seconds`))
  }
  return Effect.succeed(value)
}

/** The upload's `expires_after` (multipart `expires_after[anchor]`, `expires_after[seconds]`, as the SDKs send it). */
const expiresAfterOf = (form: FormData) => {
  const anchor = form.get("expires_after[anchor]")
  const seconds = form.get("expires_after[seconds]")
  if (anchor === null && seconds === null) return Effect.succeed(undefined)
  return expirySeconds("expires_after", anchor, seconds)
}

const isFile = (value: unknown): value is File => typeof value === "object" && value !== null && "arrayBuffer" in value

/** The upload: one `file` part and `purpose: batch`, as UTF-8 text that can be stored. */
const readUpload = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const contentType = request.headers["content-type"] ?? ""
  if (!/^multipart\/form-data/i.test(contentType)) {
    return yield* badRequest("expected a multipart/form-data body with `file` and `purpose`", null, "invalid_body")
  }
  const { maxBodyBytes } = yield* HttpSettings
  const bytes = yield* readBytes(request, {
    maxBodyBytes: Math.min(Math.max(maxBodyBytes, MAX_BATCH_FILE_BYTES), MAX_BATCH_FILE_BYTES + MULTIPART_SLACK_BYTES)
  })
  const form = yield* parseFormData(bytes, contentType)
  const purpose = form.get("purpose")
  if (purpose !== "batch") {
    return yield* badRequest("purpose: only 'batch' files can be uploaded to this gateway", "purpose")
  }
  const expiresAfterSeconds = yield* expiresAfterOf(form)
  const files = form.getAll("file")
  const file = files[0]
  if (files.length !== 1 || !isFile(file)) return yield* badRequest("file: exactly one file upload is required", "file")
  if (file.size === 0) return yield* badRequest("file: the file is empty", "file")
  if (file.size > MAX_BATCH_FILE_BYTES) {
    return yield* apiError(413, `file: larger than the ${MAX_BATCH_FILE_BYTES}-byte limit`, {
      code: "file_too_large",
      param: "file"
    })
  }
  // Edge: File.arrayBuffer (the Fetch API's multipart parser) is promise-based.
  const raw = yield* Effect.tryPromise({
    try: () => file.arrayBuffer(),
    catch: () => badRequest("file: the upload could not be read", "file")
  })
  // Edge: TextDecoder reports bytes that are not UTF-8 by throwing (`fatal`); Result.try keeps the throw here.
  const text = Result.try(() => new TextDecoder("utf-8", { fatal: true }).decode(raw))
  if (Result.isFailure(text)) return yield* badRequest("file: expected UTF-8 text (JSONL)", "file")
  const decoded = text.success
  const problem = storableTextProblem(decoded)
  if (problem !== undefined) return yield* badRequest(`file: ${problem}`, "file")
  const filename = (file.name === "" ? "upload.jsonl" : file.name).slice(0, MAX_FILENAME)
  const nameProblem = storableTextProblem(filename)
  if (nameProblem !== undefined) return yield* badRequest(`file: its name ${nameProblem}`, "file")
  return { purpose, filename, content: decoded, expiresAfterSeconds }
})

const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")

const create = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const upload = yield* readUpload
  return json(fileObject(yield* (yield* Batches).createFile(key.accountId, upload)))
})

const list = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const query = new URL((yield* HttpServerRequest.HttpServerRequest).url, "http://x").searchParams
  const limit = yield* limitParam(query, 10_000, 10_000)
  const page = yield* (yield* Batches).listFiles(key.accountId, {
    limit,
    after: query.get("after") ?? undefined,
    purpose: query.get("purpose") ?? undefined
  })
  const data = page.rows.map(fileObject)
  return json(listPage(data, page.hasMore))
})

const retrieve = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return json(fileObject(yield* (yield* Batches).getFile(key.accountId, yield* idParam)))
})

const content = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const text = yield* (yield* Batches).fileContent(key.accountId, yield* idParam)
  return HttpServerResponse.text(text, { contentType: "application/jsonl" })
})

const remove = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const id = yield* idParam
  yield* (yield* Batches).deleteFile(key.accountId, id)
  return json({ id, object: "file", deleted: true })
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/files", create, "openai"),
  route("GET", "/v1/files", list, "openai"),
  route("GET", "/v1/files/:id", retrieve, "openai"),
  route("GET", "/v1/files/:id/content", content, "openai"),
  route("DELETE", "/v1/files/:id", remove, "openai")
)
