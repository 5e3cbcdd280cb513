/**
 * Gemini image models (any model id containing `image`) on `:generateContent` and `:streamGenerateContent`: a short
 * caption and real PNGs in `inlineData`, sized from `imageConfig` or the first input image, with image token usage.
 * Knobs are prompt markers (see ImageMarkers.ts).
 */
import { countText, IMAGE_TOKENS, splitByTokens } from "../../tokenizer/Tokenizer.ts"
import { countGeminiContents } from "../../tokenizer/ChatTally.ts"
import { geminiError } from "../ErrorEnvelopes.ts"
import { checkGeminiAuth, geminiStream } from "../GeminiGenerate.ts"
import { arrayField, field, isRecord, type JsonRecord, stringField } from "../Json.ts"
import { dataFrame, json, type SimContext, type SimReply, type SimRequest } from "../SimResponse.ts"
import { drawPng, fitLongEdge, type ImageSize, readImageSize } from "./ImageFiles.ts"
import { readMarkers, stripMarkers } from "./ImageMarkers.ts"
import { geminiImageTokens } from "./ImageTokens.ts"

/** Input image types Gemini image models accept; any other `inlineData` type is a 400. */
export const GEMINI_INPUT_IMAGE_TYPES: ReadonlyArray<string> = [
  "image/png",
  "image/jpeg",
  "image/webp",
  "image/heic",
  "image/heif"
]

/** Long edge in pixels per `imageConfig.imageSize`; the default is 1K. */
export const GEMINI_IMAGE_EDGES: Readonly<Record<string, number>> = { "512": 512, "1K": 1024, "2K": 2048, "4K": 4096 }

/** Whether the simulator answers this Gemini model with images. */
export const isGeminiImageModel = (model: string): boolean => model.includes("image")

const TOKENS_PER_DELTA = 4

const either = (value: unknown, camel: string, snake: string): unknown => field(value, camel) ?? field(value, snake)

const partsOf = (content: unknown): ReadonlyArray<JsonRecord> => (arrayField(content, "parts") ?? []).filter(isRecord)

interface InlineImage {
  readonly mimeType: string
  readonly data: string
}

const inlineOf = (part: JsonRecord): InlineImage | undefined => {
  const inline = either(part, "inlineData", "inline_data")
  if (!isRecord(inline)) return undefined
  return {
    mimeType: (stringField(inline, "mimeType") ?? stringField(inline, "mime_type") ?? "").toLowerCase(),
    data: stringField(inline, "data") ?? ""
  }
}

const invalid = (message: string): SimReply => json(400, geminiError(400, message))

const UNREADABLE_IMAGE =
  "Unable to process input image. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"

const parseAspectRatio = (value: string): number | undefined => {
  const match = /^(\d+):(\d+)$/.exec(value.trim())
  if (match === null) return undefined
  const width = Number(match[1])
  const height = Number(match[2])
  return width > 0 && height > 0 ? width / height : undefined
}

export const geminiImage = (
  request: SimRequest,
  context: SimContext,
  model: string,
  method: "generateContent" | "streamGenerateContent"
): SimReply => {
  const unauthorized = checkGeminiAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  if (request.bodyInvalid || !isRecord(request.body)) return invalid("Invalid JSON payload received. Unexpected token.")
  if (context.models !== undefined && !context.models.includes(model)) {
    return json(
      404,
      geminiError(404, `models/${model} is not found for API version v1beta, or is not supported for generateContent.`)
    )
  }
  const body = request.body
  const contents = arrayField(body, "contents")
  if (contents === undefined || contents.length === 0) {
    return invalid("* GenerateContentRequest.contents: contents is not specified\n")
  }

  // Every inline image must be of an accepted type and readable; the size of the one the edit starts from matters.
  const sizes = new Map<InlineImage, ImageSize>()
  let imageCount = 0
  for (const content of contents) {
    for (const part of partsOf(content)) {
      const inline = inlineOf(part)
      if (inline === undefined) continue
      if (!GEMINI_INPUT_IMAGE_TYPES.includes(inline.mimeType)) {
        return invalid(`Unsupported MIME type: ${inline.mimeType === "" ? "(none)" : inline.mimeType}`)
      }
      const size = readImageSize(Buffer.from(inline.data, "base64"))
      if (size === undefined) return invalid(UNREADABLE_IMAGE)
      sizes.set(inline, size)
      imageCount += 1
    }
  }
  const userContents = contents.filter((content) => (stringField(content, "role") ?? "user") === "user")
  const lastUser = userContents[userContents.length - 1]
  const prompt = partsOf(lastUser)
    .filter((part) => typeof part.text === "string" && part.thought !== true)
    .map((part) => part.text as string)
    .join("\n")
  const markers = readMarkers(prompt)

  const config = either(body, "generationConfig", "generation_config")
  const imageConfig = either(config, "imageConfig", "image_config")
  const aspectText = stringField(imageConfig, "aspectRatio") ?? stringField(imageConfig, "aspect_ratio")
  const aspect = aspectText === undefined ? undefined : parseAspectRatio(aspectText)
  if (aspectText !== undefined && aspect === undefined) {
    return invalid(
      `* GenerateContentRequest.generation_config.image_config.aspect_ratio: invalid value "${aspectText}"`
    )
  }
  const imageSizeText = stringField(imageConfig, "imageSize") ?? stringField(imageConfig, "image_size")
  const edge = GEMINI_IMAGE_EDGES[imageSizeText?.toUpperCase() ?? "1K"]
  if (edge === undefined) {
    return invalid(
      `* GenerateContentRequest.generation_config.image_config.image_size: invalid value "${imageSizeText}"`
    )
  }
  const modalities = either(config, "responseModalities", "response_modalities")
  const imagesAllowed =
    !Array.isArray(modalities) || modalities.some((m) => typeof m === "string" && m.toUpperCase() === "IMAGE")

  // The edit starts from the first image of the last user turn, else from the latest image in the conversation.
  const inputImages = [...sizes.entries()]
  const lastUserImages = partsOf(lastUser).flatMap((part) => {
    const inline = inlineOf(part)
    const size = inline === undefined ? undefined : sizes.get(inline)
    return size === undefined ? [] : [size]
  })
  const source = lastUserImages[0] ?? inputImages[inputImages.length - 1]?.[1]
  const ratio = aspect ?? (source === undefined ? 1 : source.width / source.height)
  const size = fitLongEdge(ratio, edge)

  const systemInstruction = either(body, "systemInstruction", "system_instruction")
  const promptTokens = countGeminiContents({
    contents,
    ...(systemInstruction === undefined ? {} : { systemInstruction })
  })
  const imagePromptTokens = Math.min(promptTokens, imageCount * IMAGE_TOKENS)
  const promptDetails = [
    { modality: "TEXT", tokenCount: promptTokens - imagePromptTokens },
    ...(imageCount > 0 ? [{ modality: "IMAGE", tokenCount: imagePromptTokens }] : [])
  ]
  const responseId = `sim${context.nextId()}`
  const envelope = (extra: JsonRecord) => ({ ...extra, modelVersion: model, responseId })
  const promptOnlyUsage = {
    promptTokenCount: promptTokens,
    totalTokenCount: promptTokens,
    promptTokensDetails: promptDetails
  }

  const single = (reply: unknown): SimReply => {
    if (method === "generateContent") return json(200, reply)
    if (request.query.get("alt") !== "sse") return json(200, [reply])
    return {
      _tag: "Sse",
      headers: {},
      head: [],
      tail: [dataFrame(reply)],
      filler: (n) => dataFrame(envelope({ candidates: [{ content: { role: "model", parts: [{ text: ` ${n}` }] } }] })),
      error: dataFrame(geminiError(503, "The model is overloaded. Please try again later.")),
      malformed: `data: {"candidates":[{"content":{"role":"model","parts":[{"text":\n\n`
    }
  }

  if (markers.blocked) {
    return single(envelope({ promptFeedback: { blockReason: "SAFETY" }, usageMetadata: promptOnlyUsage }))
  }
  if (markers.finishReason !== undefined) {
    return single(
      envelope({ candidates: [{ finishReason: markers.finishReason, index: 0 }], usageMetadata: promptOnlyUsage })
    )
  }

  const subject = stripMarkers(prompt)
  const shown = subject.length > 80 ? `${subject.slice(0, 80)}…` : subject
  const imageTotal = markers.textOnly || !imagesAllowed ? 0 : (markers.images ?? 1)
  const caption =
    imageTotal === 0
      ? `I can't draw that right now, but picture this: ${shown === "" ? "an empty canvas" : shown}.`
      : imageTotal === 1
        ? `Here is your image${shown === "" ? "" : `: ${shown}`}.`
        : `Here are ${imageTotal} images${shown === "" ? "" : `: ${shown}`}.`
  const images = Array.from({ length: imageTotal }, (_, index) => ({
    inlineData: {
      mimeType: "image/png",
      data: drawPng(size, { seed: `${subject}\u0000${index}`, noisy: markers.noisy }).toString("base64")
    }
  }))
  const textTokens = countText(caption)
  const imageTokens = imageTotal * geminiImageTokens(model, imageSizeText)
  const usage = {
    promptTokenCount: promptTokens,
    candidatesTokenCount: textTokens + imageTokens,
    totalTokenCount: promptTokens + textTokens + imageTokens,
    promptTokensDetails: promptDetails,
    candidatesTokensDetails: [
      ...(imageTokens > 0 ? [{ modality: "IMAGE", tokenCount: imageTokens }] : []),
      { modality: "TEXT", tokenCount: textTokens }
    ]
  }
  const response = (parts: ReadonlyArray<unknown>, final: boolean) =>
    envelope({
      candidates: [{ content: { role: "model", parts }, ...(final ? { finishReason: "STOP" } : {}), index: 0 }],
      usageMetadata: final ? usage : { promptTokenCount: promptTokens, totalTokenCount: promptTokens }
    })

  if (method === "generateContent") return json(200, response([{ text: caption }, ...images], true))

  // Streaming: the caption in small deltas, then each image whole in its own chunk; finish and usage on the last one.
  const chunks: Array<ReadonlyArray<unknown>> = [
    ...splitByTokens(caption, TOKENS_PER_DELTA).map((text) => [{ text }]),
    ...images.map((image) => [image])
  ]
  return geminiStream(request, chunks, response)
}
