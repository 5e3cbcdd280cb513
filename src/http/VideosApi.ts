/**
 * Video generation (docs/api/videos.md): `POST /v1/videos` submits a task (JSON, or multipart as the official
 * `openai` SDK sends it), `GET /v1/videos/{id}` polls it, `GET /v1/videos` lists the caller's tasks, and
 * `GET /v1/videos/{id}/content` serves the stored MP4 with `Range` support. A task belongs to its account: any
 * other key gets 404. Content asked for before completion is a 409; after expiry a 410 `video_expired`.
 */
import { clip } from "../domain/Quoted.ts"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { ContentStore } from "../app/ContentStore.ts"
import type { VideoTaskRow } from "../app/ports/VideoTaskStore.ts"
import { VideoTasks } from "../app/VideoTasks.ts"
import { formatMicros } from "../domain/Money.ts"
import { storableTextProblem } from "../domain/StorableText.ts"
import { validateVideoSubmit } from "../domain/video/VideoSubmit.ts"
import { pixelSize, sizeKeyOf, type VideoRatio, type VideoResolution } from "../domain/video/VideoSpec.ts"
import { apiError, badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { checkJson, limitParam } from "./InputLimits.ts"
import { parseFormData, parseJsonField, readBytes, readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"
import { listPage } from "../domain/ListPage.ts"

const MAX_IDEMPOTENCY_KEY = 255
const MAX_LIST_LIMIT = 100

const unix = (date: Date | null) => (date === null ? null : Math.floor(date.getTime() / 1000))

/** The address clients download from: the same origin they called, so it works behind a proxy that sets Host. */
const contentUrl = (request: HttpServerRequest.HttpServerRequest, id: string) => {
  const proto = request.headers["x-forwarded-proto"]?.split(",")[0]?.trim() ?? "http"
  const host = request.headers["x-forwarded-host"] ?? request.headers.host ?? "localhost"
  return `${proto}://${host}/v1/videos/${encodeURIComponent(id)}/content`
}

/** The video object: OpenAI's shape (all keys, nullable ones null) plus the spec's `metadata` and our `charge`. */
export const videoObject = (row: VideoTaskRow, url: string) => {
  const size = pixelSize(row.resolution as VideoResolution, row.ratio as VideoRatio)
  const completed = row.status === "completed"
  return {
    id: row.id,
    object: "video",
    model: row.model,
    status: row.status,
    progress: row.progress,
    created_at: unix(row.created_at),
    completed_at: unix(row.completed_at),
    expires_at: unix(row.expires_at),
    prompt: row.prompt,
    size: `${size.width}x${size.height}`,
    seconds: String(row.seconds),
    remixed_from_video_id: null,
    metadata: {
      ...(completed ? { url } : {}),
      resolution: row.resolution,
      ratio: row.ratio,
      input_type: row.input_type
    },
    error:
      row.status === "failed" ? { code: row.error_code ?? "failed", message: row.error_message ?? "failed" } : null,
    charge: {
      held: formatMicros(BigInt(row.held)),
      captured: row.captured === null ? null : formatMicros(BigInt(row.captured)),
      refunded: row.refunded === null ? null : formatMicros(BigInt(row.refunded)),
      ...(row.tokens === null ? {} : { video_tokens: Number(row.tokens) })
    }
  }
}

/** Multipart fields as strings; a file part (the SDK's `input_reference` upload) is refused with the reason. */
const multipartFields = (contentType: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const bytes = yield* readBytes(request, yield* HttpSettings)
    const form = yield* parseFormData(bytes, contentType)
    const fields: Record<string, unknown> = {}
    for (const [name, value] of form.entries()) {
      if (typeof value !== "string") {
        return yield* badRequest(
          `${name}: file uploads are not supported for video inputs; pass publicly reachable image URLs in metadata.images`,
          name
        )
      }
      fields[name] = value
    }
    return fields
  })

/** OpenAI's `size` ("1280x720") is accepted as another way to say resolution and ratio. */
const withSize = (fields: Record<string, unknown>) =>
  Effect.gen(function* () {
    const size = fields.size
    if (size === undefined || size === null || size === "") return fields
    const match = typeof size === "string" ? /^(\d{2,5})x(\d{2,5})$/.exec(size) : null
    const key = match === null ? undefined : sizeKeyOf(Number(match[1]), Number(match[2]))
    if (key === undefined) {
      return yield* badRequest(
        `size: '${clip(String(size))}' is not an offered size; pass metadata.resolution and metadata.ratio instead`,
        "size"
      )
    }
    const raw = fields.metadata
    const metadata =
      typeof raw === "string" ? (JSON.parse(raw === "" ? "{}" : raw) as Record<string, unknown>) : (raw ?? {})
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return fields
    return {
      ...fields,
      metadata: { resolution: key.resolution, ratio: key.ratio, ...(metadata as Record<string, unknown>) }
    }
  }).pipe(Effect.catchDefect(() => Effect.fail(badRequest("metadata: expected a JSON object", "metadata"))))

const submit = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const request = yield* HttpServerRequest.HttpServerRequest
  const contentType = request.headers["content-type"] ?? ""
  const multipart = /^multipart\/form-data/i.test(contentType)
  // Everything in a submit is stored with the task: the JSON body's text is checked as it is read, the multipart
  // fields here, and `metadata` sent as a JSON string once parsed (its escapes can spell a NUL).
  const raw = multipart ? yield* multipartFields(contentType) : yield* readJson(request, yield* HttpSettings)
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return yield* badRequest("the request body must be a JSON object", null, "invalid_body")
  }
  if (multipart) yield* checkJson(raw, { storable: true })
  const metadata = (raw as Record<string, unknown>).metadata
  const parsed =
    typeof metadata === "string" && metadata.trim() !== ""
      ? { ...(raw as Record<string, unknown>), metadata: yield* parseJsonField(metadata, ["metadata"]) }
      : (raw as Record<string, unknown>)
  const fields = yield* withSize(parsed)
  const idempotencyKey = request.headers["idempotency-key"] ?? null
  if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > MAX_IDEMPOTENCY_KEY)) {
    return yield* badRequest(`Idempotency-Key: expected 1 to ${MAX_IDEMPOTENCY_KEY} characters`, "Idempotency-Key")
  }
  const keyProblem = idempotencyKey === null ? undefined : storableTextProblem(idempotencyKey)
  if (keyProblem !== undefined) return yield* badRequest(`Idempotency-Key: ${keyProblem}`, "Idempotency-Key")
  const validated = validateVideoSubmit(fields)
  if (validated._tag === "Problem") {
    return yield* apiError(400, validated.message, { param: validated.param, code: validated.code })
  }
  const videos = yield* VideoTasks
  const { task, replayed } = yield* videos.submit({
    key,
    model: validated.model,
    request: validated.request,
    idempotencyKey,
    requestId: yield* RequestId
  })
  const row = yield* videos.get(key.accountId, task.taskId)
  const body = videoObject(row, contentUrl(request, task.taskId))
  const response = json(body, 200)
  return replayed ? HttpServerResponse.setHeader(response, "idempotent-replayed", "true") : response
})

const idParam = Effect.map(HttpRouter.params, (params) => params.id ?? "")

const retrieve = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const id = yield* idParam
  const row = yield* (yield* VideoTasks).get(key.accountId, id)
  return json(videoObject(row, contentUrl(yield* HttpServerRequest.HttpServerRequest, id)))
})

/** One page of an account's tasks, newest first by default (the key holder's own, or any account for the admin). */
export const listFor = (accountId: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const query = new URL(request.url, "http://x").searchParams
    const limit = yield* limitParam(query, 20, MAX_LIST_LIMIT)
    const order = query.get("order") ?? "desc"
    if (order !== "asc" && order !== "desc") return yield* badRequest("order: expected asc or desc", "order")
    const after = query.get("after") ?? undefined
    const page = yield* (yield* VideoTasks).list(accountId, { limit, after, order })
    const data = page.rows.map((row) => videoObject(row, contentUrl(request, row.id)))
    return json(listPage(data, page.hasMore))
  })

const list = Effect.flatMap(authenticate("openai"), (key) => listFor(key.accountId))

/** `bytes=a-b`, `bytes=a-`, `bytes=-n` (one range; several ranges are answered whole, as RFC 9110 allows). */
const parseRange = (header: string | undefined, size: number) => {
  if (header === undefined) return { _tag: "Whole" } as const
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  if (match === null || (match[1] === "" && match[2] === "")) return { _tag: "Whole" } as const
  const start = match[1] === "" ? Math.max(0, size - Number(match[2])) : Number(match[1])
  const end = match[1] === "" || match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1)
  if (start >= size || start > end) return { _tag: "Unsatisfiable" } as const
  return { _tag: "Range", start, end } as const
}

/** The stored MP4 of one of the account's tasks, with `Range` support. */
export const downloadFor = (accountId: string, id: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const variant = new URL(request.url, "http://x").searchParams.get("variant")
    if (variant !== null && variant !== "video") {
      return yield* badRequest(`variant: only 'video' is stored, not '${clip(variant)}'`, "variant")
    }
    const stored = yield* (yield* VideoTasks).content(accountId, id)
    const store = yield* ContentStore
    const range = parseRange(request.headers.range, stored.size)
    const common = {
      "accept-ranges": "bytes",
      "content-disposition": `attachment; filename="${id}.mp4"`,
      "cache-control": "private, max-age=3600"
    }
    if (range._tag === "Unsatisfiable") {
      return HttpServerResponse.empty({
        status: 416,
        headers: { ...common, "content-range": `bytes */${stored.size}` }
      })
    }
    if (range._tag === "Whole") {
      return HttpServerResponse.stream(store.read(stored.key), {
        contentType: "video/mp4",
        contentLength: stored.size,
        headers: common
      })
    }
    return HttpServerResponse.stream(store.read(stored.key, { start: range.start, end: range.end }), {
      status: 206,
      contentType: "video/mp4",
      contentLength: range.end - range.start + 1,
      headers: { ...common, "content-range": `bytes ${range.start}-${range.end}/${stored.size}` }
    })
  })

const download = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  return yield* downloadFor(key.accountId, yield* idParam)
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/videos", submit, "openai"),
  route("GET", "/v1/videos", list, "openai"),
  route("GET", "/v1/videos/:id", retrieve, "openai"),
  route("GET", "/v1/videos/:id/content", download, "openai")
)
