/**
 * The Gemini `generateContent` body for a chat-style image call. A chat client's conversation (OpenAI or Anthropic,
 * via the IR) becomes `contents` whose earlier replies have their inlined Markdown images turned back into
 * `inlineData` parts, so only the image bytes cross the wire, once each, and only the most recent few earlier images
 * (a long edit session would otherwise resend every frame). A Gemini client's body is kept as sent, its images checked.
 */
import { Effect } from "effect"
import type { ChatCall } from "../ModelPlugin.ts"
import { type PluginFailure, pluginFailure } from "../ModelPlugin.ts"
import type { ImageSource, Message } from "../text/convert/ChatIR.ts"
import { asArray, asRecord, asString, isRecord, type JsonRecord } from "../text/convert/json.ts"
import { checkBase64Image, type ImageFetcher, type InlineImage, isHttpUrl, resolveImageUrl } from "./ImageInputs.ts"
import { splitMarkdownImages } from "./MarkdownImages.ts"

/** Earlier-turn images kept in context; older ones are dropped (each turn is billed anyway, and frames are big). */
export const MAX_HISTORY_IMAGES = 3

export const IMAGE_MODALITIES: ReadonlyArray<string> = ["TEXT", "IMAGE"]

export const toolsRejected = pluginFailure(
  "invalid_request",
  "image models do not take tools: remove `tools` from the request (turn off plugins or agent tools for this model); nothing was charged",
  { code: "tools_not_supported", param: "tools" }
)

type PendingImage =
  | { readonly _tag: "Source"; readonly source: ImageSource }
  | { readonly _tag: "Inline"; readonly mimeType: string; readonly data: string }

type PendingPart =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Image"; readonly image: PendingImage }

interface PendingContent {
  readonly role: "user" | "model"
  readonly parts: Array<PendingPart>
}

const textParts = (text: string): Array<PendingPart> =>
  splitMarkdownImages(text).flatMap((segment): Array<PendingPart> => {
    if (segment._tag === "Image") {
      return [{ _tag: "Image", image: { _tag: "Inline", mimeType: segment.mimeType, data: segment.data } }]
    }
    const trimmed = segment.text.trim()
    return trimmed === "" ? [] : [{ _tag: "Text", text: trimmed }]
  })

const pendingContents = (messages: ReadonlyArray<Message>): Array<PendingContent> => {
  const contents: Array<PendingContent> = []
  for (const message of messages) {
    const role = message.role === "assistant" ? "model" : message.role === "user" ? "user" : undefined
    if (role === undefined) continue // tool results: tools are refused before this
    const parts: Array<PendingPart> = []
    for (const part of message.content) {
      if (part.type === "text") parts.push(...textParts(part.text))
      else if (part.type === "image") parts.push({ _tag: "Image", image: { _tag: "Source", source: part.source } })
    }
    if (parts.length === 0) continue
    const last = contents.at(-1)
    if (last !== undefined && last.role === role) last.parts.push(...parts)
    else contents.push({ role, parts })
  }
  return contents
}

/** Drops all but the newest {@link MAX_HISTORY_IMAGES} images before the last user turn. */
const capHistory = (contents: ReadonlyArray<PendingContent>): Array<PendingContent> => {
  let lastUser = contents.length - 1
  while (lastUser >= 0 && contents[lastUser].role !== "user") lastUser--
  let kept = 0
  const out: Array<PendingContent> = []
  for (let i = contents.length - 1; i >= 0; i--) {
    const content = contents[i]
    if (i >= lastUser) {
      out.push(content)
      continue
    }
    const parts: Array<PendingPart> = []
    for (let j = content.parts.length - 1; j >= 0; j--) {
      const part = content.parts[j]
      if (part._tag === "Image" && ++kept > MAX_HISTORY_IMAGES) continue
      parts.push(part)
    }
    if (parts.length > 0) out.push({ role: content.role, parts: parts.reverse() })
  }
  return out.reverse()
}

const resolvePending = (
  image: PendingImage,
  where: string,
  fetcher: ImageFetcher,
  signal: AbortSignal
): Effect.Effect<InlineImage, PluginFailure> => {
  if (image._tag === "Inline") return checkBase64Image(image.mimeType, image.data, where)
  const source = image.source
  return source.kind === "base64"
    ? checkBase64Image(source.mediaType, source.data, where)
    : resolveImageUrl(source.url, where, fetcher, signal)
}

const imageConfigOf = (body: JsonRecord): JsonRecord | undefined => {
  const config = asRecord(body.image_config ?? body.imageConfig)
  const aspectRatio = asString(config.aspect_ratio ?? config.aspectRatio)
  const imageSize = asString(config.image_size ?? config.imageSize)
  if (aspectRatio === undefined && imageSize === undefined) return undefined
  return {
    ...(aspectRatio === undefined ? {} : { aspectRatio }),
    ...(imageSize === undefined ? {} : { imageSize })
  }
}

/** OpenRouter's `modalities: ["image","text"]`, as Gemini spells it. */
const modalitiesOf = (body: JsonRecord): ReadonlyArray<string> => {
  const asked = asArray(body.modalities).flatMap((m) => (typeof m === "string" ? [m.toUpperCase()] : []))
  return asked.length > 0 ? asked : IMAGE_MODALITIES
}

export const hasTools = (body: JsonRecord): boolean =>
  (Array.isArray(body.tools) && body.tools.length > 0) || (Array.isArray(body.functions) && body.functions.length > 0)

/** The Gemini body for a chat client (OpenAI or Anthropic dialect). */
export const geminiBodyFromChat = (call: ChatCall, fetcher: ImageFetcher): Effect.Effect<JsonRecord, PluginFailure> =>
  Effect.gen(function* () {
    const { request, client } = call
    if (request.tools.length > 0 || hasTools(client.body)) return yield* Effect.fail(toolsRejected)
    const contents = capHistory(pendingContents(request.messages))
    if (!contents.some((content) => content.role === "user")) {
      return yield* Effect.fail(
        pluginFailure("invalid_request", "messages: at least one user message with a prompt is required", {
          param: "messages"
        })
      )
    }
    let counter = 0
    const resolved = yield* Effect.forEach(contents, (content) =>
      Effect.map(
        Effect.forEach(
          content.parts,
          (part): Effect.Effect<JsonRecord, PluginFailure> => {
            if (part._tag === "Text") return Effect.succeed({ text: part.text })
            counter += 1
            return Effect.map(resolvePending(part.image, `input image ${counter}`, fetcher, call.signal), (image) => ({
              inlineData: { mimeType: image.mimeType, data: image.data }
            }))
          },
          { concurrency: 4 }
        ),
        (parts) => ({ role: content.role, parts })
      )
    )
    const system = request.system.map((part) => part.text).join("\n")
    const imageConfig = imageConfigOf(client.body)
    return {
      contents: resolved,
      ...(system === "" ? {} : { systemInstruction: { parts: [{ text: system }] } }),
      generationConfig: {
        responseModalities: modalitiesOf(client.body),
        ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
        ...(request.topP === undefined ? {} : { topP: request.topP }),
        ...(imageConfig === undefined ? {} : { imageConfig })
      }
    }
  })

const FILES_API_PREFIX = "https://generativelanguage.googleapis.com/"

/** A Gemini client's part, checked: inline images of an accepted type, public links fetched and inlined. */
const checkGeminiPart = (
  part: unknown,
  where: string,
  fetcher: ImageFetcher,
  signal: AbortSignal
): Effect.Effect<unknown, PluginFailure> => {
  if (!isRecord(part)) return Effect.succeed(part)
  const inline = part.inlineData ?? part.inline_data
  if (isRecord(inline)) {
    const mimeType = asString(inline.mimeType ?? inline.mime_type)
    const data = asString(inline.data) ?? ""
    return Effect.map(checkBase64Image(mimeType, data, where), (image) => {
      if (image.mimeType === mimeType) return part
      const { inline_data: _snake, ...rest } = part
      return { ...rest, inlineData: { mimeType: image.mimeType, data } }
    })
  }
  const file = part.fileData ?? part.file_data
  const uri = isRecord(file) ? asString(file.fileUri ?? file.file_uri) : undefined
  if (uri !== undefined && isHttpUrl(uri) && !uri.startsWith(FILES_API_PREFIX)) {
    return Effect.map(resolveImageUrl(uri, where, fetcher, signal), (image) => ({
      inlineData: { mimeType: image.mimeType, data: image.data }
    }))
  }
  return Effect.succeed(part)
}

/** A Gemini client's own body, forwarded as sent once its images pass; image output is asked for when not set. */
export const geminiBodyFromNative = (
  body: JsonRecord,
  fetcher: ImageFetcher,
  signal: AbortSignal
): Effect.Effect<JsonRecord, PluginFailure> =>
  Effect.gen(function* () {
    if (hasTools(body)) return yield* Effect.fail(toolsRejected)
    let counter = 0
    const contents = yield* Effect.forEach(asArray(body.contents), (content) => {
      if (!isRecord(content)) return Effect.succeed(content)
      return Effect.map(
        Effect.forEach(
          asArray(content.parts),
          (part) => {
            const isImage = isRecord(part) && (part.inlineData ?? part.inline_data ?? part.fileData ?? part.file_data)
            if (isImage) counter += 1
            return checkGeminiPart(part, `input image ${counter}`, fetcher, signal)
          },
          { concurrency: 4 }
        ),
        (parts) => ({ ...content, parts })
      )
    })
    const config = asRecord(body.generationConfig ?? body.generation_config)
    const modalities = config.responseModalities ?? config.response_modalities
    const { generation_config: _snake, ...rest } = body
    return {
      ...rest,
      contents,
      generationConfig: modalities === undefined ? { ...config, responseModalities: IMAGE_MODALITIES } : config
    }
  })
