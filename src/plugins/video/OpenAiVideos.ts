/**
 * The OpenAI Videos API (Sora): the create body (sent as JSON, which the spec accepts) and the
 * mapping of a video object to the gateway's states. The API takes a prompt and at most one reference image, so
 * first/last-frame requests and reference clips cannot be expressed on it.
 */
import { Result } from "effect"
import { pixelSize, type VideoRequest } from "../../domain/video/VideoSpec.ts"
import { type PluginFailure, pluginFailure, type VideoUpstreamStatus } from "../ModelPlugin.ts"
import { asRecord, asString, isRecord } from "../text/convert/json.ts"

/** Why an openai-videos upstream cannot take this request, or undefined when it can. */
export const openAiVideosRefusal = (request: VideoRequest, upstreamName: string): PluginFailure | undefined => {
  const expressible =
    request.inputType === "text_to_video" ||
    (request.inputType === "reference" && request.images.length === 1 && request.videos.length === 0)
  if (expressible) return undefined
  const what =
    request.inputType === "first_last_frame"
      ? "first/last-frame input"
      : "reference input other than a single image (several images, or reference videos)"
  return pluginFailure(
    "invalid_request",
    `input_type ${request.inputType}: the model's upstream ${upstreamName} speaks the OpenAI videos API, which cannot take ${what}; send text only or one reference image`,
    { code: "unsupported_input_type" }
  )
}

export const openAiVideosCreateBody = (request: VideoRequest, upstreamModel: string): Record<string, unknown> => {
  const { width, height } = pixelSize(request.resolution, request.ratio)
  const reference = request.inputType === "reference" ? request.images[0] : undefined
  return {
    model: upstreamModel,
    prompt: request.prompt,
    seconds: String(request.seconds),
    size: `${width}x${height}`,
    ...(reference === undefined ? {} : { input_reference: { image_url: reference } })
  }
}

const malformed = (what: string): PluginFailure =>
  pluginFailure("unavailable", `the upstream sent a malformed video object: ${what}`)

/** The id of a video object. */
export const openAiVideoId = (body: unknown): Result.Result<string, PluginFailure> => {
  const id = asString(asRecord(body).id)
  return id === undefined || id === "" ? Result.fail(malformed("no id")) : Result.succeed(id)
}

const progressOf = (value: unknown): number =>
  typeof value === "number" && Number.isFinite(value) ? Math.min(100, Math.max(0, Math.round(value))) : 0

/** A video object (`GET /videos/{id}`) as the gateway's view of it; `contentUrl` is where a finished one is fetched. */
export const openAiVideoStatus = (
  body: unknown,
  contentUrl: string
): Result.Result<VideoUpstreamStatus, PluginFailure> => {
  if (!isRecord(body)) return Result.fail(malformed("not a JSON object"))
  const status = asString(body.status)
  switch (status) {
    case "queued":
    case "in_progress":
      return Result.succeed({ _tag: "Pending", status, progress: progressOf(body.progress) })
    case "completed":
      return Result.succeed({ _tag: "Succeeded", videoUrl: contentUrl, completionTokens: null })
    case "failed": {
      const error = asRecord(body.error)
      return Result.succeed({
        _tag: "Failed",
        reason: "failed",
        code: asString(error.code) ?? "video_failed",
        message: asString(error.message) ?? "the upstream reports the video as failed"
      })
    }
    default:
      return Result.fail(
        malformed(`unknown status ${status === undefined ? "(none)" : JSON.stringify(status.slice(0, 40))}`)
      )
  }
}
