/**
 * Ark (BytePlus ModelArk / Volcengine) Seedance content-generation tasks, protocols.md §6.2, under `/api/v3`: create,
 * get, list and delete (cancel). Usage is the vendor's formula (VideoSpec's `videoTokens`), reported once a task
 * succeeds; `content.video_url` links to the rendered MP4 on the simulator. Faults are prompt markers (VideoMarkers.ts).
 */
import {
  DEFAULT_VIDEO_RATIO,
  DEFAULT_VIDEO_RESOLUTION,
  DEFAULT_VIDEO_SECONDS,
  MAX_VIDEO_CLIPS,
  MAX_VIDEO_IMAGES,
  pixelSize,
  VIDEO_FPS,
  VIDEO_RATIOS,
  VIDEO_RESOLUTIONS,
  type VideoRatio,
  type VideoResolution,
  videoTokens
} from "../../../domain/video/VideoSpec.ts"
import { field, isRecord, type JsonRecord, numberField, stringField } from "../Json.ts"
import { header, json, type SimContext, type SimReply, type SimRequest } from "../SimResponse.ts"
import { fileUrl } from "./VideoFiles.ts"
import { phaseOf, type VideoJob, type VideoJobs, type VideoPhase } from "./VideoJobs.ts"
import { deliveredSeconds, videoOutcome } from "./VideoMarkers.ts"

export const ARK_PREFIX = "/api/v3"
export const ARK_TASKS_PATH = `${ARK_PREFIX}/contents/generations/tasks`

export const ARK_MIN_SECONDS = 2
export const ARK_MAX_SECONDS = 15
const DEFAULT_EXPIRES_AFTER = 172_800
const MAX_SEED = 2 ** 32 - 1

const arkTypes: Readonly<Record<number, string>> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  429: "TooManyRequests",
  500: "InternalServerError",
  502: "BadGateway",
  503: "ServiceUnavailable",
  504: "GatewayTimeout"
}

const arkCodes: Readonly<Record<number, string>> = {
  400: "InvalidParameter",
  401: "AuthenticationError",
  403: "AccessDenied",
  404: "ResourceNotFound",
  429: "RateLimitExceeded",
  500: "InternalServiceError",
  503: "ServiceUnavailable"
}

export const arkError = (status: number, code: string, message: string, param = ""): unknown => ({
  error: { code, message, param, type: arkTypes[status] ?? (status >= 500 ? "InternalServerError" : "BadRequest") }
})

/** The body of a forced error status (`x-sim-fault: status=…`) in Ark's envelope. */
export const arkForcedError = (status: number, requestId: string): unknown =>
  arkError(
    status,
    arkCodes[status] ?? (status >= 500 ? "InternalServiceError" : "InvalidParameter"),
    `Simulated error ${status}. Request id: ${requestId}`
  )

const invalid = (message: string, param: string): SimReply =>
  json(
    400,
    arkError(
      400,
      "InvalidParameter",
      `The parameter \`${param}\` specified in the request is not valid: ${message}`,
      param
    )
  )

export const checkArkAuth = (request: SimRequest, context: SimContext): SimReply | undefined => {
  const authorization = header(request, "authorization") ?? ""
  const key = authorization.toLowerCase().startsWith("bearer ") ? authorization.slice(7).trim() : ""
  if (key === context.apiKey) return undefined
  return json(401, arkError(401, "AuthenticationError", "The API key or AK/SK in the request is missing or invalid."))
}

const isReply = (value: unknown): value is SimReply =>
  isRecord(value) && (value._tag === "Json" || value._tag === "Sse")

interface ArkContent {
  readonly prompt: string
}

const IMAGE_ROLES = ["first_frame", "last_frame", "reference_image"]

const isLink = (url: unknown): boolean =>
  typeof url === "string" && (/^https?:\/\/\S+$/i.test(url) || /^data:[a-z]+\/[\w.+-]+;base64,/i.test(url))

/** `content[]`: one or more text items, and inputs in one of the vendor's mutually exclusive modes. */
const readContent = (content: unknown): ArkContent | SimReply => {
  if (!Array.isArray(content) || content.length === 0) return invalid("content must be a non-empty array", "content")
  const texts: Array<string> = []
  const roles: Array<string> = []
  let unroledImages = 0
  let clips = 0
  for (const [index, item] of content.entries()) {
    const param = `content[${index}]`
    const type = stringField(item, "type")
    switch (type) {
      case "text": {
        const text = stringField(item, "text")
        if (text === undefined) return invalid("text must be a string", `${param}.text`)
        if (text.trim() !== "") texts.push(text)
        break
      }
      case "image_url": {
        if (!isLink(field(field(item, "image_url"), "url"))) {
          return invalid("image_url.url must be an http(s) URL or a base64 data URL", `${param}.image_url.url`)
        }
        const role = field(item, "role")
        if (role === undefined || role === null) unroledImages += 1
        else if (typeof role !== "string" || !IMAGE_ROLES.includes(role)) {
          return invalid(`unsupported role ${JSON.stringify(role)} for image_url`, `${param}.role`)
        } else roles.push(role)
        break
      }
      case "video_url": {
        if (!isLink(field(field(item, "video_url"), "url"))) {
          return invalid("video_url.url must be an http(s) URL", `${param}.video_url.url`)
        }
        if (field(item, "role") !== "reference_video") {
          return invalid("video_url requires role reference_video", `${param}.role`)
        }
        clips += 1
        break
      }
      case "audio_url": {
        if (!isLink(field(field(item, "audio_url"), "url"))) {
          return invalid("audio_url.url must be an http(s) URL", `${param}.audio_url.url`)
        }
        if (field(item, "role") !== "reference_audio") {
          return invalid("audio_url requires role reference_audio", `${param}.role`)
        }
        break
      }
      default:
        return invalid(`unsupported content type ${JSON.stringify(type ?? null)}`, `${param}.type`)
    }
  }
  if (texts.length === 0) return invalid("a text prompt is required", "content")
  const count = (role: string): number => roles.filter((r) => r === role).length
  const first = count("first_frame")
  const last = count("last_frame")
  const references = count("reference_image")
  if (unroledImages > 0 && (unroledImages > 1 || roles.length > 0)) {
    return invalid("every image needs a role when more than one image is given", "content")
  }
  if (first > 1 || last > 1) return invalid("at most one first_frame and one last_frame image", "content")
  if (last === 1 && first === 0) return invalid("last_frame requires a first_frame image", "content")
  if (references > 0 && first + last + unroledImages > 0) {
    return invalid("reference_image cannot be combined with first_frame or last_frame", "content")
  }
  if (references > MAX_VIDEO_IMAGES) {
    return invalid(`at most ${MAX_VIDEO_IMAGES} reference_image items are accepted`, "content")
  }
  if (clips > MAX_VIDEO_CLIPS)
    return invalid(`at most ${MAX_VIDEO_CLIPS} reference_video items are accepted`, "content")
  if (clips > 0 && first + last + unroledImages > 0) {
    return invalid("reference_video cannot be combined with first_frame or last_frame", "content")
  }
  return { prompt: texts.join("\n") }
}

interface ArkParams {
  readonly resolution: VideoResolution
  readonly ratio: VideoRatio
  readonly duration: number
  readonly generateAudio: boolean
  readonly seed: number | undefined
}

const oneOf = <A extends string>(values: ReadonlyArray<A>, value: unknown): value is A =>
  typeof value === "string" && (values as ReadonlyArray<string>).includes(value)

const optionalBoolean = (body: JsonRecord, key: string): boolean | undefined | SimReply => {
  const value = body[key]
  if (value === undefined || value === null) return undefined
  return typeof value === "boolean" ? value : invalid(`${key} must be a boolean`, key)
}

const readParams = (body: JsonRecord): ArkParams | SimReply => {
  const resolution = body.resolution ?? DEFAULT_VIDEO_RESOLUTION
  if (!oneOf(VIDEO_RESOLUTIONS, resolution)) {
    return invalid(`resolution must be one of ${VIDEO_RESOLUTIONS.join(", ")}`, "resolution")
  }
  const ratioRaw = body.ratio ?? DEFAULT_VIDEO_RATIO
  // `adaptive` lets the vendor pick from the input image; the simulator draws no image, so it picks the default.
  const ratio = ratioRaw === "adaptive" ? DEFAULT_VIDEO_RATIO : ratioRaw
  if (!oneOf(VIDEO_RATIOS, ratio)) return invalid(`ratio must be one of ${VIDEO_RATIOS.join(", ")}, adaptive`, "ratio")
  const duration = body.duration ?? DEFAULT_VIDEO_SECONDS
  if (
    typeof duration !== "number" ||
    !Number.isInteger(duration) ||
    duration < ARK_MIN_SECONDS ||
    duration > ARK_MAX_SECONDS
  ) {
    return invalid(`duration must be an integer between ${ARK_MIN_SECONDS} and ${ARK_MAX_SECONDS}`, "duration")
  }
  const generateAudio = optionalBoolean(body, "generate_audio")
  if (isReply(generateAudio)) return generateAudio
  for (const key of ["watermark", "camera_fixed", "return_last_frame"]) {
    const flag = optionalBoolean(body, key)
    if (isReply(flag)) return flag
  }
  const seed = body.seed
  if (
    seed !== undefined &&
    seed !== null &&
    (typeof seed !== "number" || !Number.isInteger(seed) || seed < -1 || seed > MAX_SEED)
  ) {
    return invalid(`seed must be an integer between -1 and ${MAX_SEED}`, "seed")
  }
  return {
    resolution,
    ratio,
    duration,
    generateAudio: generateAudio ?? true,
    seed: typeof seed === "number" && seed >= 0 ? seed : undefined
  }
}

/** `POST /api/v3/contents/generations/tasks` → `{id}`. */
export const arkCreate = (request: SimRequest, context: SimContext, jobs: VideoJobs): SimReply => {
  const unauthorized = checkArkAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  if (request.bodyInvalid || !isRecord(request.body)) {
    return json(400, arkError(400, "InvalidParameter", "The request body is not valid JSON."))
  }
  const body = request.body
  const model = stringField(body, "model")
  if (model === undefined || model === "") return invalid("model is required", "model")
  if (context.models !== undefined && !context.models.includes(model)) {
    return json(
      404,
      arkError(
        404,
        "InvalidEndpointOrModel.NotFound",
        `The model or endpoint ${model} does not exist or you do not have access to it.`
      )
    )
  }
  const content = readContent(body.content)
  if (isReply(content)) return content
  const params = readParams(body)
  if (isReply(params)) return params
  const size = pixelSize(params.resolution, params.ratio)
  const job = jobs.submit({
    api: "ark",
    model,
    prompt: content.prompt,
    spec: {
      width: size.width,
      height: size.height,
      seconds: deliveredSeconds(content.prompt, params.duration),
      audio: params.generateAudio
    },
    outcome: videoOutcome(content.prompt),
    echo: {
      resolution: params.resolution,
      ratio: params.ratio,
      seed: params.seed ?? (jobs.now() % 100_000) + 1,
      service_tier: stringField(body, "service_tier") ?? "default",
      execution_expires_after: numberField(body, "execution_expires_after") ?? DEFAULT_EXPIRES_AFTER
    }
  })
  return json(200, { id: job.id })
}

const ARK_STATUS = {
  Queued: "queued",
  Running: "running",
  Succeeded: "succeeded",
  Failed: "failed",
  Expired: "expired",
  Cancelled: "cancelled"
} as const

const seconds = (ms: number): number => Math.floor(ms / 1000)

const taskError = (phase: VideoPhase, requestId: string): unknown => {
  switch (phase._tag) {
    case "Failed":
      return phase.cause === "marker"
        ? {
            code: "OutputVideoSensitiveContentDetected",
            message: `The request failed because the output video may contain sensitive information. Request id: ${requestId}`
          }
        : { code: "InternalServiceError", message: `The video could not be rendered: ${phase.message}` }
    case "Expired":
      return { code: "TaskExpired", message: "The task exceeded its execution_expires_after and expired." }
    default:
      return null
  }
}

/** The task object of `GET …/tasks/{id}` as it stands now. */
export const arkTask = (jobs: VideoJobs, job: VideoJob): unknown => {
  const phase = phaseOf(job, jobs.now())
  const updatedMs = phase._tag === "Queued" ? job.createdAtMs : phase._tag === "Running" ? phase.sinceMs : phase.atMs
  const tokens = Number(videoTokens(job.spec, job.spec.seconds))
  const succeeded = phase._tag === "Succeeded"
  return {
    id: job.id,
    model: job.model,
    status: ARK_STATUS[phase._tag],
    ...(succeeded ? { content: { video_url: fileUrl(jobs, job) } } : {}),
    ...(succeeded ? { usage: { completion_tokens: tokens, total_tokens: tokens } } : {}),
    created_at: seconds(job.createdAtMs),
    updated_at: seconds(updatedMs),
    seed: job.echo.seed,
    resolution: job.echo.resolution,
    ratio: job.echo.ratio,
    duration: job.spec.seconds,
    framespersecond: VIDEO_FPS,
    generate_audio: job.spec.audio,
    service_tier: job.echo.service_tier,
    execution_expires_after: job.echo.execution_expires_after,
    draft: false,
    error: taskError(phase, job.id)
  }
}

const notFound = (id: string): SimReply =>
  json(404, arkError(404, "ResourceNotFound", `The specified task ${id} is not found.`, "id"))

/** `GET /api/v3/contents/generations/tasks/{id}`. */
export const arkGet = (request: SimRequest, context: SimContext, jobs: VideoJobs, id: string): SimReply => {
  const unauthorized = checkArkAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const job = jobs.find("ark", id)
  return job === undefined || jobs.unseen(job) ? notFound(id) : json(200, arkTask(jobs, job))
}

/** `DELETE …/tasks/{id}`: cancels a queued task, deletes a finished one, refuses a running one. */
export const arkDelete = (request: SimRequest, context: SimContext, jobs: VideoJobs, id: string): SimReply => {
  const unauthorized = checkArkAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const job = jobs.find("ark", id)
  if (job === undefined) return notFound(id)
  const phase = phaseOf(job, jobs.now())
  if (phase._tag === "Queued") jobs.cancel(job)
  else if (phase._tag === "Running") {
    return json(
      409,
      arkError(409, "InvalidAction.TaskRunning", `The task ${id} is running and can be neither cancelled nor deleted.`)
    )
  } else jobs.remove(job)
  return json(200, {})
}

const positiveInt = (value: string | null, fallback: number): number => {
  const parsed = value === null ? Number.NaN : Number(value)
  return Number.isInteger(parsed) && parsed > 0 ? parsed : fallback
}

/** `GET …/tasks?page_num=&page_size=&filter.status=&filter.task_ids=&filter.model=` → `{items, total}`, newest first. */
export const arkList = (request: SimRequest, context: SimContext, jobs: VideoJobs): SimReply => {
  const unauthorized = checkArkAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const status = request.query.get("filter.status")
  const model = request.query.get("filter.model")
  const ids = request.query.getAll("filter.task_ids").flatMap((value) => value.split(","))
  const tasks = jobs
    .list("ark")
    .toReversed()
    .filter((job) => model === null || job.model === model)
    .filter((job) => ids.length === 0 || ids.includes(job.id))
    .map((job) => arkTask(jobs, job))
    .filter((task) => status === null || field(task, "status") === status)
  const pageSize = Math.min(500, positiveInt(request.query.get("page_size"), 10))
  const pageNum = positiveInt(request.query.get("page_num"), 1)
  return json(200, { items: tasks.slice((pageNum - 1) * pageSize, pageNum * pageSize), total: tasks.length })
}
