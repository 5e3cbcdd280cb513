/**
 * Ark (BytePlus ModelArk / Volcengine) Seedance content-generation tasks, under `/api/v3`: create,
 * get, list and delete (cancel). Usage is the vendor's formula (VideoSpec's `videoTokens`), reported once a task
 * succeeds; `content.video_url` links to the rendered MP4 on the simulator. Faults are prompt markers (VideoMarkers.ts).
 */
import { pixelSize, VIDEO_FPS, videoTokens } from "../../../domain/video/VideoSpec.ts"
import { field, isRecord, numberField, stringField } from "../Json.ts"
import { header, json, type SimContext, type SimReply, type SimRequest } from "../SimResponse.ts"
import { fileUrl } from "./VideoFiles.ts"
import { phaseOf, type VideoJob, type VideoJobs, type VideoPhase } from "./VideoJobs.ts"
import { deliveredSeconds, videoOutcome } from "./VideoMarkers.ts"
import { isReply, readContent, readParams } from "./ArkRequest.ts"
import { invalid } from "./ArkRequest.ts"
import { arkCodes, arkError } from "./ArkRequest.ts"

export const ARK_PREFIX = "/api/v3"
export const ARK_TASKS_PATH = `${ARK_PREFIX}/contents/generations/tasks`

const DEFAULT_EXPIRES_AFTER = 172_800

/** The body of a forced error status (`x-sim-fault: status=…`) in Ark's envelope. */
export const arkForcedError = (status: number, requestId: string): unknown =>
  arkError(
    status,
    arkCodes[status] ?? (status >= 500 ? "InternalServiceError" : "InvalidParameter"),
    `Simulated error ${status}. Request id: ${requestId}`
  )

export const checkArkAuth = (request: SimRequest, context: SimContext): SimReply | undefined => {
  const authorization = header(request, "authorization") ?? ""
  const key = authorization.toLowerCase().startsWith("bearer ") ? authorization.slice(7).trim() : ""
  if (key === context.apiKey) return undefined
  return json(401, arkError(401, "AuthenticationError", "The API key or AK/SK in the request is missing or invalid."))
}

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
