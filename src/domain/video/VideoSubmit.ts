/**
 * The validator of `POST /v1/videos` (docs/api/videos.md): the body's fields, from JSON or from multipart (where the
 * official `openai` SDK sends `seconds` and `metadata` as strings), become a `VideoRequest` and the model id, or the
 * first problem found, naming the field. Pure: which models exist is decided elsewhere.
 */
import { clip } from "../Quoted.ts"
import { Result } from "effect"
import { storableTextProblem } from "../StorableText.ts"
import {
  DEFAULT_VIDEO_RATIO,
  DEFAULT_VIDEO_RESOLUTION,
  DEFAULT_VIDEO_SECONDS,
  MAX_VIDEO_CLIPS,
  MAX_VIDEO_IMAGES,
  MAX_VIDEO_SECONDS,
  MIN_VIDEO_SECONDS,
  VIDEO_INPUT_TYPES,
  VIDEO_RATIOS,
  VIDEO_RESOLUTIONS,
  type VideoInputType,
  type VideoRatio,
  type VideoRequest,
  type VideoResolution
} from "./VideoSpec.ts"

/** In characters (code points), so a prompt in any script gets the same allowance. */
export const MAX_VIDEO_PROMPT_CHARS = 32000

/** The longest image or video link, in characters: what browsers and CDNs reliably carry; it is stored with the task. */
export const MAX_VIDEO_LINK_CHARS = 2048

export interface VideoSubmitProblem {
  readonly _tag: "Problem"
  /** The field at fault, as the client wrote it: `seconds`, `metadata.ratio`, `metadata.images[2]`. */
  readonly param: string
  readonly message: string
  readonly code: string
}

export interface ValidVideoSubmit {
  readonly _tag: "Valid"
  readonly model: string
  readonly request: VideoRequest
}

export type VideoSubmitResult = ValidVideoSubmit | VideoSubmitProblem

export const videoSubmitCodes = {
  missing: "missing_required_parameter",
  invalidType: "invalid_type",
  invalidValue: "invalid_value",
  tooLong: "string_above_max_length",
  tooMany: "array_above_max_length",
  inlineData: "inline_data_not_supported",
  inputTypeMismatch: "input_type_mismatch"
} as const

const problem = (param: string, message: string, code: string): VideoSubmitProblem => ({
  _tag: "Problem",
  param,
  message: `${param}: ${message}`,
  code
})

/** A client's value, quoted for a message (Quoted.ts cuts it short: a pasted data URI does not come back whole). */
const shown = (value: unknown): string => {
  const text =
    typeof value === "string"
      ? `'${value}'`
      : typeof value === "number" || typeof value === "boolean"
        ? String(value)
        : typeName(value)
  return clip(text)
}

function typeName(value: unknown): string {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  return typeof value === "object" ? "an object" : `a ${typeof value}`
}

const oneOf = (values: ReadonlyArray<string>) => values.join(", ")

const isAbsent = (value: unknown) => value === undefined || value === null

type Check<A> = Result.Result<A, VideoSubmitProblem>

const requiredText = (fields: Readonly<Record<string, unknown>>, param: "prompt" | "model"): Check<string> => {
  const value = fields[param]
  if (isAbsent(value)) return Result.fail(problem(param, "required", videoSubmitCodes.missing))
  if (typeof value !== "string") {
    return Result.fail(problem(param, `expected a string, got ${typeName(value)}`, videoSubmitCodes.invalidType))
  }
  if (value.trim() === "") return Result.fail(problem(param, "must not be empty", videoSubmitCodes.invalidValue))
  const textProblem = storableTextProblem(value)
  if (textProblem !== undefined) return Result.fail(problem(param, textProblem, videoSubmitCodes.invalidValue))
  return Result.succeed(value)
}

const checkPrompt = (fields: Readonly<Record<string, unknown>>): Check<string> =>
  Result.flatMap(requiredText(fields, "prompt"), (prompt) => {
    const length = [...prompt].length
    return length > MAX_VIDEO_PROMPT_CHARS
      ? Result.fail(
          problem("prompt", `at most ${MAX_VIDEO_PROMPT_CHARS} characters, got ${length}`, videoSubmitCodes.tooLong)
        )
      : Result.succeed(prompt)
  })

const secondsExpected = `expected an integer number of seconds from ${MIN_VIDEO_SECONDS} to ${MAX_VIDEO_SECONDS}`

/** An integer sent as a string (the spec's form) or as a JSON number; an empty multipart field means "not given". */
const checkSeconds = (value: unknown): Check<number> => {
  if (isAbsent(value) || value === "") return Result.succeed(DEFAULT_VIDEO_SECONDS)
  const seconds =
    typeof value === "string" && /^\d{1,6}$/.test(value)
      ? Number(value)
      : typeof value === "number" && Number.isInteger(value)
        ? value
        : undefined
  if (seconds === undefined || seconds < MIN_VIDEO_SECONDS || seconds > MAX_VIDEO_SECONDS) {
    return Result.fail(problem("seconds", `${secondsExpected}, got ${shown(value)}`, videoSubmitCodes.invalidValue))
  }
  return Result.succeed(seconds)
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const metadataExpected = "expected an object (or a JSON string of one)"

/** An object from JSON clients, a JSON string of one from multipart clients; an empty field means "not given". */
const checkMetadata = (value: unknown): Check<Readonly<Record<string, unknown>>> => {
  if (isAbsent(value) || value === "") return Result.succeed({})
  if (isRecord(value)) return Result.succeed(value)
  if (typeof value !== "string") {
    return Result.fail(problem("metadata", `${metadataExpected}, got ${typeName(value)}`, videoSubmitCodes.invalidType))
  }
  const parsed = Result.try(() => JSON.parse(value) as unknown)
  if (Result.isFailure(parsed)) {
    return Result.fail(
      problem("metadata", `${metadataExpected}, got text that is not JSON`, videoSubmitCodes.invalidType)
    )
  }
  return isRecord(parsed.success)
    ? Result.succeed(parsed.success)
    : Result.fail(
        problem("metadata", `${metadataExpected}, got JSON ${typeName(parsed.success)}`, videoSubmitCodes.invalidType)
      )
}

const checkChoice = <A extends string>(
  param: string,
  choices: ReadonlyArray<A>,
  value: unknown,
  fallback: A
): Check<A> => {
  if (isAbsent(value)) return Result.succeed(fallback)
  return typeof value === "string" && (choices as ReadonlyArray<string>).includes(value)
    ? Result.succeed(value as A)
    : Result.fail(
        problem(param, `expected one of ${oneOf(choices)}, got ${shown(value)}`, videoSubmitCodes.invalidValue)
      )
}

const checkRatio = (value: unknown): Check<VideoRatio> => {
  if (isAbsent(value)) return Result.succeed(DEFAULT_VIDEO_RATIO)
  if (typeof value !== "string" || !/^[1-9]\d{0,3}:[1-9]\d{0,3}$/.test(value)) {
    return Result.fail(
      problem(
        "metadata.ratio",
        `expected an aspect ratio <w>:<h> like 16:9, got ${shown(value)}`,
        videoSubmitCodes.invalidValue
      )
    )
  }
  return (VIDEO_RATIOS as ReadonlyArray<string>).includes(value)
    ? Result.succeed(value as VideoRatio)
    : Result.fail(
        problem(
          "metadata.ratio",
          `${value} is not an offered ratio; expected one of ${oneOf(VIDEO_RATIOS)}`,
          videoSubmitCodes.invalidValue
        )
      )
}

/**
 * The path of a link says nothing about its format (CDN and API links have no extension, and an extension can lie),
 * so only the form is checked here; where the address may go and what the link serves is the gateway's to learn
 * (VideoInputLinks.ts).
 */
interface LinkKind {
  readonly field: "images" | "videos"
  readonly max: number
  readonly noun: string
}

const imageLinks: LinkKind = { field: "images", max: MAX_VIDEO_IMAGES, noun: "image" }

const videoLinks: LinkKind = { field: "videos", max: MAX_VIDEO_CLIPS, noun: "video" }

const checkLink = (kind: LinkKind, index: number, value: unknown): Check<string> => {
  const param = `metadata.${kind.field}[${index}]`
  if (typeof value !== "string") {
    return Result.fail(problem(param, `expected a URL string, got ${typeName(value)}`, videoSubmitCodes.invalidType))
  }
  // Links are stored with the task: the text checks come first, before any parsing.
  const textProblem = storableTextProblem(value)
  if (textProblem !== undefined) return Result.fail(problem(param, textProblem, videoSubmitCodes.invalidValue))
  if (/^\s*data:/i.test(value)) {
    return Result.fail(
      problem(
        param,
        "inline base64 (a data: URI) is not supported for video inputs; pass a publicly reachable URL",
        videoSubmitCodes.inlineData
      )
    )
  }
  if (value.length > MAX_VIDEO_LINK_CHARS) {
    return Result.fail(
      problem(param, `at most ${MAX_VIDEO_LINK_CHARS} characters, got ${value.length}`, videoSubmitCodes.tooLong)
    )
  }
  const url = /^https?:\/\/[^\s/?#]/i.test(value) && URL.canParse(value) ? new URL(value) : undefined
  if (url === undefined || url.hostname === "") {
    return Result.fail(
      problem(param, `expected an absolute http(s) URL, got ${shown(value)}`, videoSubmitCodes.invalidValue)
    )
  }
  return Result.succeed(value)
}

const checkLinks = (kind: LinkKind, value: unknown): Check<ReadonlyArray<string>> => {
  const param = `metadata.${kind.field}`
  if (isAbsent(value)) return Result.succeed([])
  if (!Array.isArray(value)) {
    return Result.fail(
      problem(param, `expected an array of ${kind.noun} URLs, got ${typeName(value)}`, videoSubmitCodes.invalidType)
    )
  }
  if (value.length > kind.max) {
    return Result.fail(
      problem(param, `at most ${kind.max} ${kind.noun}s, got ${value.length}`, videoSubmitCodes.tooMany)
    )
  }
  const links: Array<string> = []
  for (const [index, item] of value.entries()) {
    const link = checkLink(kind, index, item)
    if (Result.isFailure(link)) return Result.fail(link.failure)
    links.push(link.success)
  }
  return Result.succeed(links)
}

/** The table of docs/api/videos.md; several clips (which it leaves open) and images with clips are `reference`. */
export const inferInputType = (images: number, videos: number): VideoInputType =>
  images === 0 && videos === 0 ? "text_to_video" : images === 2 && videos === 0 ? "first_last_frame" : "reference"

const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? "" : "s"}`

const inputsText = (images: number, videos: number) =>
  images === 0 && videos === 0 ? "no images or videos" : `${plural(images, "image")} and ${plural(videos, "video")}`

/** Whether an explicit `input_type` fits the inputs, and if not, why. */
const inputTypeConflict = (inputType: VideoInputType, images: number, videos: number): string | undefined => {
  switch (inputType) {
    case "text_to_video":
      return images + videos > 0 ? "text_to_video takes no images or videos" : undefined
    case "first_last_frame":
      return images === 2 && videos === 0
        ? undefined
        : "first_last_frame needs exactly 2 images (the start and end frames) and no videos"
    case "reference":
      return images + videos === 0 ? "reference needs at least one image or video" : undefined
  }
}

const checkInputType = (value: unknown, images: number, videos: number): Check<VideoInputType> => {
  const inferred = inferInputType(images, videos)
  return Result.flatMap(checkChoice("metadata.input_type", VIDEO_INPUT_TYPES, value, inferred), (inputType) => {
    const conflict = inputTypeConflict(inputType, images, videos)
    return conflict === undefined
      ? Result.succeed(inputType)
      : Result.fail(
          problem(
            "metadata.input_type",
            `${conflict}, but the request has ${inputsText(images, videos)}, which implies ${inferred}; ` +
              "omit input_type to have it inferred",
            videoSubmitCodes.inputTypeMismatch
          )
        )
  })
}

const validate = (fields: Readonly<Record<string, unknown>>): Check<ValidVideoSubmit> =>
  Result.gen(function* () {
    const prompt = yield* checkPrompt(fields)
    const model = yield* requiredText(fields, "model")
    const seconds = yield* checkSeconds(fields.seconds)
    const metadata = yield* checkMetadata(fields.metadata)
    const resolution = yield* checkChoice<VideoResolution>(
      "metadata.resolution",
      VIDEO_RESOLUTIONS,
      metadata.resolution,
      DEFAULT_VIDEO_RESOLUTION
    )
    const ratio = yield* checkRatio(metadata.ratio)
    const images = yield* checkLinks(imageLinks, metadata.images)
    const videos = yield* checkLinks(videoLinks, metadata.videos)
    const inputType = yield* checkInputType(metadata.input_type, images.length, videos.length)
    return {
      _tag: "Valid" as const,
      model,
      request: { prompt, seconds, resolution, ratio, inputType, images, videos }
    }
  })

/** Never throws, whatever the record holds: any value that is not a valid request becomes a problem. */
export const validateVideoSubmit = (fields: Readonly<Record<string, unknown>>): VideoSubmitResult =>
  Result.merge(validate(fields))

/** Whether one `metadata.images` / `metadata.videos` item passes: for clients that check links before sending. */
export const isVideoInputLink = (field: "images" | "videos", value: string): boolean =>
  Result.isSuccess(checkLink(field === "images" ? imageLinks : videoLinks, 0, value))
