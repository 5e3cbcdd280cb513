/**
 * Gemini image replies in the chat-completions façade (docs/api/images.md): the caption text and each image as a
 * Markdown data URI in `message.content`, in the order the parts came, several images staying several. Streams carry
 * text deltas as they come and each image whole in one chunk, then the finish, the usage and `[DONE]`.
 */
import { Result } from "effect"
import { type PluginFailure, pluginFailure, type SseFrame } from "../ModelPlugin.ts"
import { asArray, asCount, asRecord, asString, isRecord, type JsonRecord, parseJson } from "../text/convert/json.ts"
import { markdownImage } from "./MarkdownImages.ts"

const FILTERED = new Set([
  "SAFETY",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "IMAGE_OTHER",
  "PROHIBITED_CONTENT",
  "BLOCKLIST",
  "SPII",
  "RECITATION"
])

export const finishReasonOf = (finish: string): string => {
  if (finish === "MAX_TOKENS") return "length"
  return FILTERED.has(finish) ? "content_filter" : "stop"
}

export const usageOf = (metadata: unknown): JsonRecord => {
  const usage = asRecord(metadata)
  const prompt = asCount(usage.promptTokenCount)
  const completion = asCount(usage.candidatesTokenCount) + asCount(usage.thoughtsTokenCount)
  const thoughts = asCount(usage.thoughtsTokenCount)
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: asCount(usage.totalTokenCount) || prompt + completion,
    ...(thoughts > 0 ? { completion_tokens_details: { reasoning_tokens: thoughts } } : {})
  }
}

export const promptBlocked = (reason: string): PluginFailure =>
  pluginFailure(
    "invalid_request",
    `the upstream's safety filter blocked this prompt (${reason}); nothing was charged — rephrasing the prompt and retrying usually helps`,
    { code: "content_blocked" }
  )

/** Joins reply pieces: text runs as they are, an image (and the text after one) set apart by a blank line. */
export class ContentBuilder {
  #any = false
  #afterImage = false

  text(text: string): string {
    if (text === "") return ""
    const piece = this.#afterImage ? `\n\n${text.replace(/^\n+/, "")}` : text
    this.#any = true
    this.#afterImage = false
    return piece
  }

  image(mimeType: string, data: string): string {
    const piece = `${this.#any ? "\n\n" : ""}${markdownImage(mimeType, data)}`
    this.#any = true
    this.#afterImage = true
    return piece
  }
}

/** The reply pieces of one Gemini response (or stream chunk), thought parts skipped. */
const piecesOf = (candidate: JsonRecord, builder: ContentBuilder): string => {
  let out = ""
  for (const raw of asArray(asRecord(candidate.content).parts)) {
    const part = asRecord(raw)
    if (part.thought === true) continue
    const text = asString(part.text)
    if (text !== undefined) {
      out += builder.text(text)
      continue
    }
    const inline = asRecord(part.inlineData ?? part.inline_data)
    const data = asString(inline.data)
    const mimeType = asString(inline.mimeType ?? inline.mime_type) ?? "image/png"
    if (data !== undefined && mimeType.startsWith("image/")) out += builder.image(mimeType, data)
  }
  return out
}

export interface CompletionIds {
  readonly id: string
  readonly model: string
  readonly created: number
}

/** A whole Gemini response as an OpenAI chat completion; a blocked prompt (no candidates) is a 400. */
export const completionFromGemini = (body: unknown, ids: CompletionIds): Result.Result<JsonRecord, PluginFailure> => {
  const response = asRecord(body)
  const candidate = asArray(response.candidates)[0]
  if (!isRecord(candidate)) {
    const reason = asString(asRecord(response.promptFeedback).blockReason)
    return Result.fail(
      reason === undefined
        ? pluginFailure("unavailable", "the upstream sent a reply with no candidate")
        : promptBlocked(reason)
    )
  }
  const content = piecesOf(candidate, new ContentBuilder())
  return Result.succeed({
    id: ids.id,
    object: "chat.completion",
    created: ids.created,
    model: ids.model,
    choices: [
      {
        index: 0,
        message: { role: "assistant", content, refusal: null },
        logprobs: null,
        finish_reason: finishReasonOf(asString(candidate.finishReason) ?? "STOP")
      }
    ],
    usage: usageOf(response.usageMetadata)
  })
}

/**
 * Gemini SSE events → OpenAI chunk frames, one upstream event at a time; `end` gives the finish, usage and `[DONE]`
 * frames once the upstream stream is over.
 */
export const makeChunkMapper = (ids: CompletionIds) => {
  const builder = new ContentBuilder()
  let started = false
  let finish: string | undefined
  let usage: unknown
  let failed = false
  const chunk = (delta: JsonRecord, finishReason: string | null = null): SseFrame => ({
    data: JSON.stringify({
      id: ids.id,
      object: "chat.completion.chunk",
      created: ids.created,
      model: ids.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }]
    })
  })
  const push = (data: string): ReadonlyArray<SseFrame> => {
    if (failed) return []
    const event = asRecord(parseJson(data))
    const frames: Array<SseFrame> = []
    if (!started) {
      started = true
      frames.push(chunk({ role: "assistant", content: "" }))
    }
    if (isRecord(event.error)) {
      failed = true
      const message = asString(event.error.message) ?? "the upstream stream failed"
      frames.push({ data: JSON.stringify({ error: { message, type: "server_error", param: null, code: null } }) })
      return frames
    }
    if (event.usageMetadata !== undefined) usage = event.usageMetadata
    const candidate = asArray(event.candidates)[0]
    if (!isRecord(candidate)) {
      const blocked = asString(asRecord(event.promptFeedback).blockReason)
      if (blocked !== undefined) finish = "content_filter"
      return frames
    }
    const content = piecesOf(candidate, builder)
    if (content !== "") frames.push(chunk({ content }))
    const reason = asString(candidate.finishReason)
    if (reason !== undefined) finish = finishReasonOf(reason)
    return frames
  }
  const end = (): ReadonlyArray<SseFrame> => {
    if (failed) return []
    return [
      ...(started ? [] : [chunk({ role: "assistant", content: "" })]),
      chunk({}, finish ?? "stop"),
      {
        data: JSON.stringify({
          id: ids.id,
          object: "chat.completion.chunk",
          created: ids.created,
          model: ids.model,
          choices: [],
          usage: usageOf(usage)
        })
      },
      { data: "[DONE]" }
    ]
  }
  return { push, end }
}

type Source = AsyncIterator<{ readonly data: string }>

/**
 * An async iterator of frames mapped from upstream events. Written by hand, not as an async generator, so `return()`
 * reaches the upstream body at once (closing its socket) even while a `next()` waits on a silent upstream.
 */
export class MappedFrames implements AsyncIterableIterator<SseFrame> {
  #queue: Array<SseFrame> = []
  #done = false

  constructor(
    private readonly source: Source,
    private readonly mapper: ReturnType<typeof makeChunkMapper>
  ) {}

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<SseFrame>> {
    const queued = this.#queue.shift()
    if (queued !== undefined) return Promise.resolve({ done: false, value: queued })
    if (this.#done) return Promise.resolve({ done: true, value: undefined })
    return this.source.next().then((result) => {
      if (result.done === true) {
        this.#done = true
        this.#queue.push(...this.mapper.end())
      } else {
        this.#queue.push(...this.mapper.push(result.value.data))
      }
      return this.next()
    })
  }

  return(): Promise<IteratorResult<SseFrame>> {
    this.#done = true
    this.#queue = []
    const closing = this.source.return?.()
    return (closing ?? Promise.resolve()).then(() => ({ done: true, value: undefined }))
  }
}
