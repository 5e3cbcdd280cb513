import { countText, IMAGE_TOKENS } from "../../tokenizer/Tokenizer.ts"
import { openAIError } from "../ErrorEnvelopes.ts"
import { invalid, invalidValue, modelNotFound, requiredText } from "../OpenAIReplies.ts"
import { field, isRecord, type JsonRecord, stringField } from "../Json.ts"
import { checkOpenAIAuth, refuseOpenAIRequest } from "../OpenAIChat.ts"
import { header, json, type SimContext, type SimReply } from "../SimResponse.ts"
import { drawJpeg, drawPng, type ImageSize, readImageSize } from "./ImageFiles.ts"
import { readMarkers, stripMarkers } from "./ImageMarkers.ts"
import { gptImageOutputTokens, type ImageQuality, usesGptImage1Table } from "./ImageTokens.ts"
import { autoEditSize, readJsonEdit, readMultipart } from "./EditInputs.ts"
import { type RawSimRequest, type InputImage, isReply } from "./EditInputs.ts"

export const IMAGES_GENERATIONS_PATH = "/v1/images/generations"
export const IMAGES_EDITS_PATH = "/v1/images/edits"

const DEFAULT_MODEL = "gpt-image-1"
const MAX_IMAGES = 10
const MAX_EDIT_INPUTS = 16
const MAX_PROMPT_CHARS = 32_000
const TABLE_SIZES = ["1024x1024", "1024x1536", "1536x1024"]
const EDIT_INPUT_TYPES = ["image/png", "image/jpeg", "image/webp"]

export const MODERATION_MESSAGE = "Your request was rejected as a result of our safety system."

/** Multipart fields arrive as strings (`n=2`); JSON may carry numbers. */
const numberParam = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) return Number(value)
  return undefined
}

interface Options {
  readonly model: string
  readonly prompt: string
  readonly n: number
  readonly quality: ImageQuality
  readonly size: ImageSize | "auto"
  readonly background: "opaque" | "transparent"
  readonly format: "png" | "jpeg"
  readonly compression: number | undefined
}

const readOptions = (params: JsonRecord, context: SimContext): Options | SimReply => {
  const model = stringField(params, "model") ?? DEFAULT_MODEL
  if (context.models !== undefined && !context.models.includes(model)) {
    return modelNotFound(model)
  }
  const prompt = requiredText(params, "prompt", MAX_PROMPT_CHARS)
  if (typeof prompt !== "string") return prompt
  const nRaw = field(params, "n")
  const n = nRaw === undefined || nRaw === null ? 1 : numberParam(nRaw)
  if (n === undefined || !Number.isInteger(n) || n < 1 || n > MAX_IMAGES) {
    return invalid(
      `Invalid 'n': expected an integer between 1 and ${MAX_IMAGES}, but got ${String(nRaw)} instead.`,
      "n",
      "invalid_value"
    )
  }
  const qualityRaw = field(params, "quality") ?? "auto"
  if (qualityRaw !== "auto" && qualityRaw !== "low" && qualityRaw !== "medium" && qualityRaw !== "high") {
    return invalidValue("quality", qualityRaw, ["low", "medium", "high", "auto"])
  }
  const backgroundRaw = field(params, "background") ?? "auto"
  if (backgroundRaw !== "auto" && backgroundRaw !== "opaque" && backgroundRaw !== "transparent") {
    return invalidValue("background", backgroundRaw, ["transparent", "opaque", "auto"])
  }
  const format = field(params, "output_format") ?? "png"
  if (format === "webp") {
    // No WebP encoder ships in an npm package here, and a PNG labelled as WebP would only hide bugs downstream.
    return invalid(
      "unsupported output_format 'webp': the simulator encodes png and jpeg only.",
      "output_format",
      "unsupported_output_format"
    )
  }
  if (format !== "png" && format !== "jpeg") return invalidValue("output_format", format, ["png", "jpeg", "webp"])
  const compressionRaw = field(params, "output_compression")
  if (compressionRaw !== undefined && compressionRaw !== null) {
    const compression = numberParam(compressionRaw)
    if (compression === undefined || !Number.isInteger(compression) || compression < 0 || compression > 100) {
      return invalid(
        `Invalid 'output_compression': expected an integer between 0 and 100, but got ${String(compressionRaw)} instead.`,
        "output_compression",
        "invalid_value"
      )
    }
  }
  if (field(params, "stream") === true || field(params, "stream") === "true") {
    return invalid("The simulator does not stream images; send stream: false.", "stream", "unsupported_parameter")
  }
  const size = readSize(model, field(params, "size") ?? "auto")
  if (isReply(size)) return size
  return {
    model,
    prompt,
    n,
    quality: qualityRaw === "auto" ? "high" : qualityRaw,
    size,
    background: backgroundRaw === "transparent" ? "transparent" : "opaque",
    format,
    compression: compressionRaw === undefined || compressionRaw === null ? undefined : numberParam(compressionRaw)
  }
}

const readSize = (model: string, value: unknown): ImageSize | "auto" | SimReply => {
  if (value === "auto") return "auto"
  const match = typeof value === "string" ? /^(\d+)x(\d+)$/.exec(value) : null
  if (usesGptImage1Table(model)) {
    if (match === null || !TABLE_SIZES.includes(value as string)) {
      return invalidValue("size", value, [...TABLE_SIZES, "auto"])
    }
    return { width: Number(match[1]), height: Number(match[2]) }
  }
  const width = Number(match?.[1])
  const height = Number(match?.[2])
  const long = Math.max(width, height)
  const short = Math.min(width, height)
  if (match === null || width % 16 !== 0 || height % 16 !== 0 || short < 16 || long > 3840 || long > 3 * short) {
    return invalid(
      `Invalid size '${String(value)}'. Width and height must be multiples of 16, at most 3840 pixels on the long edge, with an aspect ratio between 1:3 and 3:1 (or 'auto').`,
      "size",
      "invalid_value"
    )
  }
  return { width, height }
}

const respond = (
  context: SimContext,
  options: Options,
  size: ImageSize,
  inputs: ReadonlyArray<InputImage>
): SimReply => {
  const markers = readMarkers(options.prompt)
  if (markers.moderation) {
    return json(
      400,
      openAIError(400, MODERATION_MESSAGE, { type: "image_generation_user_error", code: "moderation_blocked" })
    )
  }
  const subject = stripMarkers(options.prompt)
  const inputSeed = inputs.map((input) => input.bytes.length).join(",")
  const data = Array.from({ length: options.n }, (_, index) => ({
    b64_json: (options.format === "jpeg"
      ? drawJpeg(size, {
          seed: `${subject}\u0000${inputSeed}\u0000${index}`,
          noisy: markers.noisy,
          ...(options.compression === undefined ? {} : { quality: 100 - options.compression })
        })
      : drawPng(size, {
          seed: `${subject}\u0000${inputSeed}\u0000${index}`,
          transparent: options.background === "transparent",
          noisy: markers.noisy
        })
    ).toString("base64")
  }))
  const textTokens = countText(options.prompt)
  const imageTokens = inputs.length * IMAGE_TOKENS
  const outputTokens = options.n * gptImageOutputTokens(options.model, options.quality, size)
  return json(200, {
    created: context.createdSeconds,
    background: options.background,
    data,
    output_format: options.format,
    quality: options.quality,
    size: `${size.width}x${size.height}`,
    usage: {
      input_tokens: textTokens + imageTokens,
      output_tokens: outputTokens,
      total_tokens: textTokens + imageTokens + outputTokens,
      input_tokens_details: { text_tokens: textTokens, image_tokens: imageTokens },
      output_tokens_details: { image_tokens: outputTokens, text_tokens: 0 }
    }
  })
}

/** `POST /v1/images/generations`. */
export const imagesGenerations = (request: RawSimRequest, context: SimContext): SimReply => {
  const refused = refuseOpenAIRequest(request, context)
  if (refused !== undefined) return refused
  const options = readOptions(request.body as Readonly<Record<string, unknown>>, context)
  if (isReply(options)) return options
  const size = options.size === "auto" ? { width: 1024, height: 1024 } : options.size
  return respond(context, options, size, [])
}

/** `POST /v1/images/edits`: multipart (`image`, `image[]`, `mask`) or JSON (`images: [{image_url}]`, `mask`). */
export const imagesEdits = (request: RawSimRequest, context: SimContext): SimReply => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  const contentType = (header(request, "content-type") ?? "").toLowerCase()
  const parsed = contentType.startsWith("multipart/form-data")
    ? readMultipart(request)
    : request.bodyInvalid || !isRecord(request.body)
      ? invalid("We could not parse the JSON body of your request.")
      : readJsonEdit(request.body)
  if (isReply(parsed)) return parsed
  const options = readOptions(parsed.params, context)
  if (isReply(options)) return options
  if (parsed.images.length === 0) {
    return invalid("Missing required parameter: 'image'.", "image", "missing_required_parameter")
  }
  if (parsed.images.length > MAX_EDIT_INPUTS) {
    return invalid(`Too many images: at most ${MAX_EDIT_INPUTS} are accepted.`, "image", "invalid_value")
  }
  const sizes: Array<ImageSize> = []
  for (const [index, image] of parsed.images.entries()) {
    if (!EDIT_INPUT_TYPES.includes(image.mime)) {
      return invalid(
        `Invalid file 'image': unsupported mimetype ('${image.mime}'). Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'.`,
        "image",
        "unsupported_file_mimetype"
      )
    }
    const size = readImageSize(image.bytes)
    if (size === undefined) {
      return invalid(
        `Invalid image file or mode for image ${index + 1}, please check your image file.`,
        "image",
        "invalid_image"
      )
    }
    sizes.push(size)
  }
  const first = sizes[0]!
  if (parsed.mask !== undefined) {
    const maskSize = parsed.mask.mime === "image/png" ? readImageSize(parsed.mask.bytes) : undefined
    if (maskSize === undefined) return invalid("Invalid mask image format - mask must be a PNG file.", "mask")
    if (maskSize.width !== first.width || maskSize.height !== first.height) {
      return invalid("Invalid mask image format - mask size does not match image size", "mask")
    }
  }
  const size = options.size === "auto" ? autoEditSize(options.model, first) : options.size
  return respond(context, options, size, parsed.images)
}

/** `auto` keeps the input's size; the gpt-image-1 family only draws its three sizes, so it takes the same orientation. */
