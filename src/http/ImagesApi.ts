/**
 * The OpenAI images API: `POST /v1/images/generations` (JSON) and `POST /v1/images/edits` (multipart as the official
 * SDK sends it — `image` or repeated `image[]` files, optional `mask` — or JSON with image links and data URIs).
 * Images are returned only in `b64_json`, never as links; `usage` reports the tokens that were billed.
 */
import { clip } from "../domain/Quoted.ts"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { ImageGateway, type ImagesInput } from "../app/ImageGateway.ts"
import type { AuthenticatedKey } from "../app/Keys.ts"
import { toolsRejected } from "../plugins/chat-image/GeminiImageRequest.ts"
import type { ImageInput, ImageOperation, ImageRequest, ImagesReply } from "../plugins/ModelPlugin.ts"
import { type ApiError, badRequest } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { type Fields, optionalFlag, optionalInteger, optionalString } from "./FormFields.ts"
import { parseFormData, readBytes, readJson } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"

const MAX_IMAGES_PER_REQUEST = 10
const MAX_INPUT_IMAGES = 16

const oneOf = (
  fields: Fields,
  name: string,
  values: ReadonlyArray<string>
): Effect.Effect<string | undefined, ApiError> =>
  Effect.flatMap(optionalString(fields, name), (value) =>
    value === undefined || values.includes(value)
      ? Effect.succeed(value)
      : Effect.fail(badRequest(`${name}: expected one of ${values.join(", ")}, got '${clip(value)}'`, name))
  )

/**
 * Whether a field carries tools: a non-empty list as JSON sends it, or as a multipart field its serialisation. The
 * spec refuses tools on image models (agent clients with plugins on add them), without billing.
 */
const carriesTools = (value: unknown): boolean => {
  if (value === undefined || value === null) return false
  if (Array.isArray(value)) return value.length > 0
  if (typeof value === "string") return !["", "[]", "null"].includes(value.trim())
  return true
}

/** OpenAI's limit for GPT image models' prompts. */
const MAX_PROMPT_CHARACTERS = 32_000

/** The options generations and edits share; enums the vendor may extend stay open where the vendor's are. */
const readOptions = (fields: Fields, images: ReadonlyArray<ImageInput>, mask: ImageInput | undefined) =>
  Effect.gen(function* () {
    for (const name of ["tools", "functions"]) {
      if (carriesTools(fields[name])) {
        return yield* badRequest(toolsRejected.message, name, toolsRejected.code ?? null)
      }
    }
    const prompt = fields.prompt
    if (typeof prompt !== "string" || prompt.trim() === "") {
      return yield* badRequest("prompt: is required (a non-empty string)", "prompt")
    }
    if (prompt.length > MAX_PROMPT_CHARACTERS) {
      return yield* badRequest(`prompt: at most ${MAX_PROMPT_CHARACTERS} characters (got ${prompt.length})`, "prompt")
    }
    const model = yield* optionalString(fields, "model")
    if (model === undefined) return yield* badRequest("model: is required", "model")
    const stream = yield* optionalFlag(fields, "stream")
    if (stream === true) {
      return yield* badRequest("stream: streaming image generation is not supported; omit `stream`", "stream")
    }
    const responseFormat = yield* optionalString(fields, "response_format")
    if (responseFormat !== undefined && responseFormat !== "b64_json") {
      return yield* badRequest(
        "response_format: images are returned only as base64 in `b64_json`, never as links; omit `response_format`",
        "response_format"
      )
    }
    const size = yield* optionalString(fields, "size")
    if (size !== undefined && size !== "auto" && !/^[0-9]{2,5}x[0-9]{2,5}$/.test(size)) {
      return yield* badRequest(`size: expected 'auto' or WIDTHxHEIGHT (such as 1024x1024), got '${clip(size)}'`, "size")
    }
    const request: ImageRequest = {
      prompt,
      n: (yield* optionalInteger(fields, "n", 1, MAX_IMAGES_PER_REQUEST)) ?? 1,
      size,
      quality: yield* oneOf(fields, "quality", ["auto", "low", "medium", "high", "standard", "hd"]),
      background: yield* oneOf(fields, "background", ["auto", "transparent", "opaque"]),
      outputFormat: yield* oneOf(fields, "output_format", ["png", "jpeg", "webp"]),
      outputCompression: yield* optionalInteger(fields, "output_compression", 0, 100),
      moderation: yield* oneOf(fields, "moderation", ["auto", "low"]),
      inputFidelity: yield* oneOf(fields, "input_fidelity", ["low", "high"]),
      user: yield* optionalString(fields, "user"),
      images,
      mask
    }
    return { model, request }
  })

const objectBody = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = yield* readJson(request, yield* HttpSettings, "forwarded")
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return yield* badRequest("the request body must be a JSON object")
  }
  return body as Fields
})

/** A JSON edit's image reference: `{image_url}` (a link or a data URI), or a bare string. */
const jsonImage = (reference: unknown, param: string): Effect.Effect<ImageInput, ApiError> => {
  const url =
    typeof reference === "string"
      ? reference
      : typeof reference === "object" && reference !== null
        ? (reference as Fields).image_url
        : undefined
  if (typeof url === "string" && url !== "") return Effect.succeed({ _tag: "Url", url })
  if (typeof reference === "object" && reference !== null && "file_id" in reference) {
    return Effect.fail(badRequest(`${param}: file_id is not supported; send image_url (a link or a data URI)`, param))
  }
  return Effect.fail(badRequest(`${param}: expected {"image_url": "<link or data URI>"}`, param))
}

const jsonEdit = Effect.gen(function* () {
  const fields = yield* objectBody
  const references = Array.isArray(fields.images)
    ? fields.images
    : fields.image !== undefined
      ? Array.isArray(fields.image)
        ? fields.image
        : [fields.image]
      : []
  const images = yield* Effect.forEach(references, (reference, index) => jsonImage(reference, `images[${index}]`))
  const mask = fields.mask === undefined || fields.mask === null ? undefined : yield* jsonImage(fields.mask, "mask")
  return { fields, images, mask }
})

const isFile = (value: unknown): value is File => typeof value === "object" && value !== null && "arrayBuffer" in value

const fileInput = (file: File): Effect.Effect<ImageInput> =>
  Effect.map(
    // Edge: the Fetch API's File is promise-based.
    Effect.promise(() => file.arrayBuffer()),
    (buffer) => ({ _tag: "Bytes", data: new Uint8Array(buffer), mimeType: file.type, filename: file.name })
  )

/** Multipart as the official SDKs send it: files under `image` or `image[]`, an optional `mask`, string fields. */
const multipartEdit = (contentType: string) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const bytes = yield* readBytes(request, yield* HttpSettings)
    const form = yield* parseFormData(bytes, contentType)
    const fields: Record<string, unknown> = {}
    const files: Array<File> = []
    let mask: File | undefined
    for (const [name, value] of form.entries()) {
      if (name === "image" || name === "image[]") {
        if (!isFile(value)) return yield* badRequest(`${name}: expected a file`, "image")
        files.push(value)
      } else if (name === "mask") {
        if (!isFile(value)) return yield* badRequest("mask: expected a file", "mask")
        mask = value
      } else if (typeof value === "string") fields[name] = value
    }
    const images = yield* Effect.forEach(files, fileInput)
    return { fields, images, mask: mask === undefined ? undefined : yield* fileInput(mask) }
  })

const encodeReply = (reply: ImagesReply) => ({
  created: reply.created,
  ...reply.fields,
  data: reply.images.map((image) =>
    image.revisedPrompt === undefined
      ? { b64_json: image.b64Json }
      : { b64_json: image.b64Json, revised_prompt: image.revisedPrompt }
  ),
  usage: {
    input_tokens: reply.usage.inputTokens,
    output_tokens: reply.usage.outputTokens,
    total_tokens: reply.usage.inputTokens + reply.usage.outputTokens,
    input_tokens_details: { text_tokens: reply.usage.inputTextTokens, image_tokens: reply.usage.inputImageTokens },
    output_tokens_details: { image_tokens: reply.usage.outputTokens, text_tokens: 0 }
  }
})

interface ParsedRequest {
  readonly fields: Fields
  readonly images: ReadonlyArray<ImageInput>
  readonly mask: ImageInput | undefined
}

const serve = (operation: ImageOperation, key: AuthenticatedKey, parsed: ParsedRequest) =>
  Effect.gen(function* () {
    if (operation === "edit") {
      if (parsed.images.length === 0) return yield* badRequest("image: at least one image is required", "image")
      if (parsed.images.length > MAX_INPUT_IMAGES) {
        return yield* badRequest(`image: at most ${MAX_INPUT_IMAGES} images are accepted`, "image")
      }
    }
    const { model, request } = yield* readOptions(parsed.fields, parsed.images, parsed.mask)
    const input: ImagesInput = { operation, model, request, key, requestId: yield* RequestId }
    const reply = yield* (yield* ImageGateway).images(input)
    return json(encodeReply(reply))
  })

// The key is checked before the body is read, so an anonymous client cannot make the gateway parse megabytes.
const generations = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const fields = yield* objectBody
  return yield* serve("generate", key, { fields, images: [], mask: undefined })
})

const edits = Effect.gen(function* () {
  const key = yield* authenticate("openai")
  const request = yield* HttpServerRequest.HttpServerRequest
  const contentType = request.headers["content-type"] ?? ""
  const parsed = /^multipart\/form-data/i.test(contentType) ? yield* multipartEdit(contentType) : yield* jsonEdit
  return yield* serve("edit", key, parsed)
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/images/generations", generations, "openai"),
  route("POST", "/v1/images/edits", edits, "openai")
)
