/** An Ark video task request as the simulator reads it: its content items (text, images, videos) and parameters. */
import {
  DEFAULT_VIDEO_RATIO,
  DEFAULT_VIDEO_RESOLUTION,
  DEFAULT_VIDEO_SECONDS,
  MAX_VIDEO_CLIPS,
  MAX_VIDEO_IMAGES,
  VIDEO_RATIOS,
  VIDEO_RESOLUTIONS,
  type VideoRatio,
  type VideoResolution
} from "../../../domain/video/VideoSpec.ts"
import { field, isRecord, type JsonRecord, stringField } from "../Json.ts"
import { json, type SimReply } from "../SimResponse.ts"

export const isReply = (value: unknown): value is SimReply =>
  isRecord(value) && (value._tag === "Json" || value._tag === "Sse")

interface ArkContent {
  readonly prompt: string
}

const IMAGE_ROLES = ["first_frame", "last_frame", "reference_image"]

const isLink = (url: unknown): boolean =>
  typeof url === "string" && (/^https?:\/\/\S+$/i.test(url) || /^data:[a-z]+\/[\w.+-]+;base64,/i.test(url))

/** `content[]`: one or more text items, and inputs in one of the vendor's mutually exclusive modes. */
export const readContent = (content: unknown): ArkContent | SimReply => {
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

export const readParams = (body: JsonRecord): ArkParams | SimReply => {
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

export const ARK_MIN_SECONDS = 2

export const ARK_MAX_SECONDS = 15

export const MAX_SEED = 2 ** 32 - 1

export const invalid = (message: string, param: string): SimReply =>
  json(
    400,
    arkError(
      400,
      "InvalidParameter",
      `The parameter \`${param}\` specified in the request is not valid: ${message}`,
      param
    )
  )

export const arkTypes: Readonly<Record<number, string>> = {
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

export const arkCodes: Readonly<Record<number, string>> = {
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
