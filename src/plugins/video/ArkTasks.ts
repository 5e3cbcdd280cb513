/**
 * Ark (BytePlus ModelArk / Volcengine) Seedance content-generation tasks: the create body and the
 * mapping of a task object to the gateway's states. Ark reports no progress, so it is synthesized (0 queued, 50
 * running). Bodies are read defensively: a vendor's odd value becomes a 502, never a throw.
 */
import { Result } from "effect"
import type { VideoRequest } from "../../domain/video/VideoSpec.ts"
import { type PluginFailure, pluginFailure, type VideoUpstreamStatus } from "../ModelPlugin.ts"
import { asRecord, asString, isRecord } from "../text/convert/json.ts"

/** Ark's progress stand-in for a running task. */
export const ARK_RUNNING_PROGRESS = 50

type ContentItem =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image_url"; readonly image_url: { readonly url: string }; readonly role: string }
  | { readonly type: "video_url"; readonly video_url: { readonly url: string }; readonly role: string }

const image = (url: string, role: string): ContentItem => ({ type: "image_url", image_url: { url }, role })

/** `content[]`: the prompt, then the inputs in the roles of the request's mode (the modes are mutually exclusive). */
export const arkContent = (request: VideoRequest): ReadonlyArray<ContentItem> => {
  const text: ContentItem = { type: "text", text: request.prompt }
  switch (request.inputType) {
    case "text_to_video":
      return [text]
    case "first_last_frame":
      return [
        text,
        ...request.images.slice(0, 2).map((url, index) => image(url, index === 0 ? "first_frame" : "last_frame"))
      ]
    case "reference": {
      // One image and no clip is the vendor's image-to-video mode, whose image is the first frame.
      const alone = request.images.length === 1 && request.videos.length === 0
      return [
        text,
        ...request.images.map((url) => image(url, alone ? "first_frame" : "reference_image")),
        ...request.videos.map(
          (url): ContentItem => ({ type: "video_url", video_url: { url }, role: "reference_video" })
        )
      ]
    }
  }
}

export const arkCreateBody = (request: VideoRequest, upstreamModel: string): Record<string, unknown> => ({
  model: upstreamModel,
  content: arkContent(request),
  resolution: request.resolution,
  ratio: request.ratio,
  duration: request.seconds,
  generate_audio: true,
  watermark: false
})

const malformed = (what: string): PluginFailure =>
  pluginFailure("unavailable", `the upstream sent a malformed video task: ${what}`)

/** The task id of a create answer (`{id}`). */
export const arkTaskId = (body: unknown): Result.Result<string, PluginFailure> => {
  const id = asString(asRecord(body).id)
  return id === undefined || id === "" ? Result.fail(malformed("no task id")) : Result.succeed(id)
}

const FAILED_REASONS = { failed: "failed", cancelled: "cancelled", expired: "expired" } as const

/** A token count the upstream reported, or null when it reported none (or nonsense). */
const tokenCount = (value: unknown): number | null =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : null

/** A task object (`GET …/tasks/{id}`) as the gateway's view of it. */
export const arkStatus = (body: unknown): Result.Result<VideoUpstreamStatus, PluginFailure> => {
  if (!isRecord(body)) return Result.fail(malformed("not a JSON object"))
  const status = asString(body.status)
  switch (status) {
    case "queued":
      return Result.succeed({ _tag: "Pending", status: "queued", progress: 0 })
    case "running":
      return Result.succeed({ _tag: "Pending", status: "in_progress", progress: ARK_RUNNING_PROGRESS })
    case "succeeded": {
      const videoUrl = asString(asRecord(body.content).video_url)
      if (videoUrl === undefined || videoUrl === "")
        return Result.fail(malformed("succeeded without content.video_url"))
      return Result.succeed({
        _tag: "Succeeded",
        videoUrl,
        completionTokens: tokenCount(asRecord(body.usage).completion_tokens)
      })
    }
    case "failed":
    case "cancelled":
    case "expired": {
      const error = asRecord(body.error)
      return Result.succeed({
        _tag: "Failed",
        reason: FAILED_REASONS[status],
        code: asString(error.code) ?? `task_${status}`,
        message: asString(error.message) ?? `the upstream reports the task as ${status}`
      })
    }
    default:
      return Result.fail(
        malformed(`unknown status ${status === undefined ? "(none)" : JSON.stringify(status.slice(0, 40))}`)
      )
  }
}
