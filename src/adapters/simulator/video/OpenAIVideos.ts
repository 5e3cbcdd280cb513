/**
 * OpenAI's Videos API (Sora): `POST /v1/videos` (JSON, or multipart as openai-node sends it), get,
 * list, delete and `GET /v1/videos/{id}/content`. Like the vendor it reports no usage: a gateway bills from the file.
 * The simulator accepts any `seconds` 1..20 and any even `WxH` up to 2200 px a side, since the gateway sends the
 * pixel sizes of VideoSpec. Faults are prompt markers (VideoMarkers.ts).
 */
import { MultipartParser } from "effect/http"
import { openAIError } from "../ErrorEnvelopes.ts"
import { invalid, modelNotFound, notJson, requiredText } from "../OpenAIReplies.ts"
import type { RawSimRequest } from "../images/EditInputs.ts"
import { field, isRecord, type JsonRecord } from "../Json.ts"
import { checkOpenAIAuth } from "../OpenAIChat.ts"
import { header, json, type SimContext, type SimReply, type SimRequest } from "../SimResponse.ts"
import { type FileReply, finishedFile } from "./VideoFiles.ts"
import { phaseOf, type VideoJob, type VideoJobs, type VideoPhase } from "./VideoJobs.ts"
import { deliveredSeconds, videoOutcome } from "./VideoMarkers.ts"

export const VIDEOS_PATH = "/v1/videos"

const DEFAULT_MODEL = "sora-2"
const DEFAULT_SECONDS = "4"
const DEFAULT_SIZE = "720x1280"
const MAX_PROMPT_CHARS = 32_000
export const MIN_SORA_SECONDS = 1
export const MAX_SORA_SECONDS = 20
export const MAX_SORA_EDGE = 2200
const MIN_SORA_EDGE = 16
/** How long a finished video stays downloadable, as the vendor reports it in `expires_at`. */
const DOWNLOAD_TTL_SECONDS = 3600

const isReply = (value: unknown): value is SimReply =>
  isRecord(value) && (value._tag === "Json" || value._tag === "Sse")

const readMultipart = (request: RawSimRequest): JsonRecord | SimReply => {
  const params: Record<string, unknown> = {}
  let failure: string | undefined
  const parser = MultipartParser.make({
    headers: { "content-type": header(request, "content-type") ?? "" },
    onField: (info, value) => {
      params[info.name] = MultipartParser.decodeField(info, value)
    },
    onFile: (info) => {
      let bytes = 0
      return (chunk) => {
        if (chunk !== null) bytes += chunk.length
        else params[info.name] = { file: info.filename, content_type: info.contentType, bytes }
      }
    },
    onError: (error) => {
      failure ??= error._tag
    },
    onDone: () => {}
  })
  parser.write(request.raw)
  parser.end()
  return failure === undefined ? params : invalid(`Could not parse the multipart form (${failure}).`)
}

interface SoraOptions {
  readonly model: string
  readonly prompt: string
  readonly seconds: number
  readonly width: number
  readonly height: number
}

const readOptions = (params: JsonRecord, context: SimContext): SoraOptions | SimReply => {
  const model = params.model ?? DEFAULT_MODEL
  if (typeof model !== "string" || model === "") return invalid("Invalid 'model': expected a string.", "model")
  if (context.models !== undefined && !context.models.includes(model)) {
    return modelNotFound(model)
  }
  const prompt = requiredText(params, "prompt", MAX_PROMPT_CHARS)
  if (typeof prompt !== "string") return prompt
  const secondsRaw = params.seconds ?? DEFAULT_SECONDS
  if (typeof secondsRaw !== "string") {
    return invalid(
      `Invalid type for 'seconds': expected a string, but got ${typeof secondsRaw} instead.`,
      "seconds",
      "invalid_type"
    )
  }
  const seconds = /^\d+$/.test(secondsRaw) ? Number(secondsRaw) : Number.NaN
  if (!(seconds >= MIN_SORA_SECONDS && seconds <= MAX_SORA_SECONDS)) {
    return invalid(
      `Invalid value: '${secondsRaw}'. 'seconds' must be a whole number of seconds from ${MIN_SORA_SECONDS} to ${MAX_SORA_SECONDS}.`,
      "seconds",
      "invalid_value"
    )
  }
  const sizeRaw = params.size ?? DEFAULT_SIZE
  const match = typeof sizeRaw === "string" ? /^(\d+)x(\d+)$/.exec(sizeRaw) : null
  const width = Number(match?.[1])
  const height = Number(match?.[2])
  const edgeOk = (edge: number): boolean => edge % 2 === 0 && edge >= MIN_SORA_EDGE && edge <= MAX_SORA_EDGE
  if (match === null || !edgeOk(width) || !edgeOk(height)) {
    return invalid(
      `Invalid value: '${String(sizeRaw)}'. 'size' must be WIDTHxHEIGHT with even sides from ${MIN_SORA_EDGE} to ${MAX_SORA_EDGE} pixels.`,
      "size",
      "invalid_value"
    )
  }
  const reference = params.input_reference
  if (reference !== undefined && reference !== null) {
    const url = field(reference, "image_url")
    const fileId = field(reference, "file_id")
    const uploaded = field(reference, "bytes")
    if (typeof url !== "string" && typeof fileId !== "string" && typeof uploaded !== "number") {
      return invalid(
        "Invalid 'input_reference': expected a file upload or an object with 'image_url' or 'file_id'.",
        "input_reference",
        "invalid_value"
      )
    }
  }
  return { model, prompt, seconds, width, height }
}

const STATUS = {
  Queued: "queued",
  Running: "in_progress",
  Succeeded: "completed",
  Failed: "failed",
  Expired: "failed",
  Cancelled: "failed"
} as const

const progressOf = (phase: VideoPhase): number => {
  switch (phase._tag) {
    case "Queued":
      return 0
    case "Running":
      return Math.min(99, Math.max(1, Math.floor(phase.fraction * 100)))
    default:
      return 100
  }
}

const videoError = (phase: VideoPhase): unknown => {
  switch (phase._tag) {
    case "Failed":
      return phase.cause === "marker"
        ? { code: "moderation_blocked", message: "The generated video was blocked by our moderation system." }
        : { code: "internal_error", message: `The video could not be rendered: ${phase.message}` }
    case "Expired":
      return { code: "video_expired", message: "The video generation did not finish in time." }
    case "Cancelled":
      return { code: "cancelled", message: "The video generation was cancelled." }
    default:
      return null
  }
}

const seconds = (ms: number): number => Math.floor(ms / 1000)

/** The video object as it stands now: every key present, nullable ones null. */
export const videoObject = (jobs: VideoJobs, job: VideoJob): unknown => {
  const phase = phaseOf(job, jobs.now())
  const completedAt = phase._tag === "Succeeded" ? seconds(phase.atMs) : null
  return {
    id: job.id,
    object: "video",
    model: job.model,
    status: STATUS[phase._tag],
    progress: progressOf(phase),
    created_at: seconds(job.createdAtMs),
    completed_at: completedAt,
    expires_at: completedAt === null ? null : completedAt + DOWNLOAD_TTL_SECONDS,
    prompt: job.prompt,
    size: `${job.spec.width}x${job.spec.height}`,
    seconds: String(job.spec.seconds),
    remixed_from_video_id: null,
    error: videoError(phase)
  }
}

/** `POST /v1/videos`. */
export const createVideo = (request: RawSimRequest, context: SimContext, jobs: VideoJobs): SimReply => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const multipart = (header(request, "content-type") ?? "").toLowerCase().startsWith("multipart/form-data")
  const params = multipart
    ? readMultipart(request)
    : request.bodyInvalid || !isRecord(request.body)
      ? notJson()
      : request.body
  if (isReply(params)) return params
  const options = readOptions(params, context)
  if (isReply(options)) return options
  const job = jobs.submit({
    api: "openai",
    model: options.model,
    prompt: options.prompt,
    // The vendor's clips always carry sound.
    spec: {
      width: options.width,
      height: options.height,
      seconds: deliveredSeconds(options.prompt, options.seconds),
      audio: true
    },
    outcome: videoOutcome(options.prompt),
    echo: {}
  })
  return json(200, videoObject(jobs, job))
}

const notFound = (id: string): SimReply =>
  json(404, openAIError(404, `Video with id '${id}' not found.`, { param: "video_id", code: null }))

const withVideo = (
  request: SimRequest,
  context: SimContext,
  jobs: VideoJobs,
  id: string,
  then: (job: VideoJob) => SimReply | FileReply
): SimReply | FileReply => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const job = jobs.find("openai", id)
  return job === undefined ? notFound(id) : then(job)
}

/** `GET /v1/videos/{id}`. */
export const getVideo = (request: SimRequest, context: SimContext, jobs: VideoJobs, id: string) =>
  withVideo(request, context, jobs, id, (job) => (jobs.unseen(job) ? notFound(id) : json(200, videoObject(jobs, job))))

/** `DELETE /v1/videos/{id}`. */
export const deleteVideo = (request: SimRequest, context: SimContext, jobs: VideoJobs, id: string) =>
  withVideo(request, context, jobs, id, (job) => {
    jobs.remove(job)
    return json(200, { id: job.id, object: "video.deleted", deleted: true })
  })

/** `GET /v1/videos/{id}/content?variant=video`: the MP4, or a 404 error until the video is completed. */
export const videoContent = (request: SimRequest, context: SimContext, jobs: VideoJobs, id: string) =>
  withVideo(request, context, jobs, id, (job) => {
    const variant = request.query.get("variant") ?? "video"
    if (variant !== "video") {
      return invalid(
        `Invalid value: '${variant}'. The simulator serves only variant 'video'.`,
        "variant",
        "invalid_value"
      )
    }
    const file = finishedFile(job, jobs.now(), request.method === "HEAD")
    if (file !== undefined) return file
    const failed = phaseOf(job, jobs.now())._tag !== "Queued" && phaseOf(job, jobs.now())._tag !== "Running"
    return json(
      404,
      openAIError(
        404,
        failed
          ? `Video '${id}' failed; it has no content.`
          : `Video '${id}' is not ready yet; poll GET /v1/videos/${id} until its status is completed.`,
        { code: null }
      )
    )
  })

/** `GET /v1/videos?limit=&order=asc|desc&after=`. */
export const listVideos = (request: SimRequest, context: SimContext, jobs: VideoJobs): SimReply => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const limitRaw = Number(request.query.get("limit") ?? "20")
  const limit = Number.isInteger(limitRaw) && limitRaw > 0 ? Math.min(100, limitRaw) : 20
  const ordered = request.query.get("order") === "asc" ? jobs.list("openai") : jobs.list("openai").toReversed()
  const after = request.query.get("after")
  const start = after === null ? 0 : ordered.findIndex((job) => job.id === after) + 1
  const page = ordered.slice(start, start + limit)
  return json(200, {
    object: "list",
    data: page.map((job) => videoObject(jobs, job)),
    first_id: page[0]?.id ?? null,
    last_id: page.at(-1)?.id ?? null,
    has_more: start + limit < ordered.length
  })
}
