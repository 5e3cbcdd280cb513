/**
 * Input tokens of a chat request in any of the three dialects, as a tally: counted at once while the request is
 * walked, except the texts past the room, which are counted in slices that leave the event loop free between them.
 */
import { Effect } from "effect"
import {
  ATTACHMENT_TOKENS,
  IMAGE_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
  SLICE_CHARS,
  countText,
  countTextSliced
} from "./Tokenizer.ts"

type Json = unknown

/**
 * A count in progress: the tokens so far, the characters that may still be tokenized right away (`room`), and the
 * texts left for a sliced count once the room is used up. A small request is counted in full while it is walked.
 */
export interface Tally {
  tokens: number
  room: number
  deferred: Array<string> | undefined
}

const addText = (tally: Tally, text: string): void => {
  if (text.length === 0) return
  if (tally.deferred === undefined && text.length <= tally.room) {
    tally.room -= text.length
    tally.tokens += countText(text)
  } else if (tally.deferred === undefined) tally.deferred = [text]
  else tally.deferred.push(text)
}

const isRecord = (value: Json): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const asString = (value: Json): string => (typeof value === "string" ? value : "")

const addJson = (tally: Tally, value: Json): void => {
  if (value !== undefined) addText(tally, typeof value === "string" ? value : JSON.stringify(value))
}

const isImagePart = (type: string): boolean =>
  type === "image_url" || type === "image" || type === "input_image" || type === "inlineData" || type === "inline_data"

/** One content part of any of the three dialects. Unknown parts are counted as their JSON text. */
const addPart = (tally: Tally, part: Json): void => {
  if (typeof part === "string") {
    addText(tally, part)
    return
  }
  if (!isRecord(part)) return
  const type = asString(part.type)
  if (
    typeof part.text === "string" &&
    (type === "" || type === "text" || type === "input_text" || type === "output_text")
  ) {
    addText(tally, part.text)
  } else if (isImagePart(type)) {
    tally.tokens += IMAGE_TOKENS
  } else if (type === "input_audio" || type === "file" || type === "document" || type === "input_file") {
    tally.tokens += ATTACHMENT_TOKENS
  } else if (type === "tool_use") {
    addText(tally, asString(part.name))
    addJson(tally, part.input)
  } else if (type === "tool_result") {
    addContent(tally, part.content)
  } else if (type === "thinking") {
    addText(tally, asString(part.thinking))
  } else if (type === "redacted_thinking") {
    addText(tally, asString(part.data))
  } else {
    addGeminiPart(tally, part)
  }
}

// Gemini parts carry no `type`; the key that is present says what they are.
const addGeminiPart = (tally: Tally, part: Record<string, unknown>): void => {
  const inline = part.inlineData ?? part.inline_data
  const call = part.functionCall ?? part.function_call
  const response = part.functionResponse ?? part.function_response
  if (isRecord(inline)) {
    const mimeType = asString(inline.mimeType ?? inline.mime_type)
    tally.tokens += mimeType.startsWith("image/") ? IMAGE_TOKENS : ATTACHMENT_TOKENS
  } else if (isRecord(part.fileData ?? part.file_data)) {
    tally.tokens += ATTACHMENT_TOKENS
  } else if (isRecord(call)) {
    addText(tally, asString(call.name))
    addJson(tally, call.args)
  } else if (isRecord(response)) {
    addText(tally, asString(response.name))
    addJson(tally, response.response)
  } else {
    addJson(tally, part)
  }
}

/** A message `content`: a string, an array of parts, or null. */
const addContent = (tally: Tally, content: Json): void => {
  if (typeof content === "string") addText(tally, content)
  else if (Array.isArray(content)) for (const part of content) addPart(tally, part)
}

const addTools = (tally: Tally, tools: ReadonlyArray<unknown> | null | undefined): void => {
  if (tools && tools.length > 0) addJson(tally, tools)
}

/** An OpenAI-shaped chat request: the fields that cost input tokens. */
export interface OpenAIChatInput {
  readonly messages: ReadonlyArray<unknown>
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

const addOpenAIMessage = (tally: Tally, message: Json): void => {
  if (!isRecord(message)) return
  tally.tokens += MESSAGE_OVERHEAD_TOKENS
  addText(tally, asString(message.role))
  addContent(tally, message.content)
  if (typeof message.name === "string") {
    addText(tally, message.name)
    tally.tokens += 1
  }
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      const fn = isRecord(call) && isRecord(call.function) ? call.function : {}
      addText(tally, asString(fn.name))
      addText(tally, asString(fn.arguments))
    }
  }
  const reasoning = message.reasoning_content ?? message.reasoning
  if (typeof reasoning === "string") addText(tally, reasoning)
}

/** An Anthropic-shaped messages request: the fields that cost input tokens. */
export interface AnthropicMessagesInput {
  readonly messages: ReadonlyArray<unknown>
  readonly system?: unknown
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

/** A Gemini `generateContent` request: the fields that cost input tokens. */
export interface GeminiContentsInput {
  readonly contents: ReadonlyArray<unknown>
  readonly systemInstruction?: unknown
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

const addGeminiContent = (tally: Tally, content: Json): void => {
  addContent(tally, isRecord(content) && Array.isArray(content.parts) ? content.parts : content)
}

/**
 * Walks a request with `room` characters to tokenize at once: the tally holds the whole count when the request's
 * texts fit in it, otherwise the count so far and the texts left for `finishTally`.
 */
export const tallyOpenAIChat = (request: OpenAIChatInput, room: number = SLICE_CHARS): Tally => {
  const tally: Tally = { tokens: REPLY_PRIMING_TOKENS, room, deferred: undefined }
  for (const message of request.messages) addOpenAIMessage(tally, message)
  addTools(tally, request.tools)
  return tally
}

export const tallyAnthropicMessages = (request: AnthropicMessagesInput, room: number = SLICE_CHARS): Tally => {
  const tally: Tally = { tokens: REPLY_PRIMING_TOKENS, room, deferred: undefined }
  if (request.system !== undefined && request.system !== null) addContent(tally, request.system)
  for (const message of request.messages) {
    if (!isRecord(message)) continue
    tally.tokens += MESSAGE_OVERHEAD_TOKENS
    addContent(tally, message.content)
  }
  addTools(tally, request.tools)
  return tally
}

export const tallyGeminiContents = (request: GeminiContentsInput, room: number = SLICE_CHARS): Tally => {
  const tally: Tally = { tokens: REPLY_PRIMING_TOKENS, room, deferred: undefined }
  if (request.systemInstruction !== undefined) addGeminiContent(tally, request.systemInstruction)
  for (const content of request.contents) {
    tally.tokens += MESSAGE_OVERHEAD_TOKENS
    addGeminiContent(tally, content)
  }
  addTools(tally, request.tools)
  return tally
}

/** A Responses API request: the fields that cost input tokens. */
export interface ResponsesInput {
  readonly input: unknown
  readonly instructions?: unknown
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

const addResponsesItem = (tally: Tally, item: Json): void => {
  if (!isRecord(item)) return
  tally.tokens += MESSAGE_OVERHEAD_TOKENS
  switch (item.type) {
    case "function_call":
      addText(tally, asString(item.name))
      addText(tally, asString(item.arguments))
      break
    case "function_call_output":
      addContent(tally, item.output)
      break
    case "reasoning":
      if (Array.isArray(item.summary)) for (const part of item.summary) addPart(tally, part)
      break
    default:
      if ("content" in item) addContent(tally, item.content)
      else addJson(tally, item)
  }
}

export const tallyResponses = (request: ResponsesInput, room: number = SLICE_CHARS): Tally => {
  const tally: Tally = { tokens: REPLY_PRIMING_TOKENS, room, deferred: undefined }
  if (typeof request.instructions === "string") addText(tally, request.instructions)
  else if (Array.isArray(request.instructions)) for (const item of request.instructions) addResponsesItem(tally, item)
  if (typeof request.input === "string") {
    tally.tokens += MESSAGE_OVERHEAD_TOKENS
    addText(tally, request.input)
  } else if (Array.isArray(request.input)) for (const item of request.input) addResponsesItem(tally, item)
  addTools(tally, request.tools)
  return tally
}

/** Plain texts (embedding inputs, prompts) as one tally. */
export const tallyTexts = (texts: ReadonlyArray<string>, room: number = SLICE_CHARS): Tally => {
  const tally: Tally = { tokens: 0, room, deferred: undefined }
  for (const text of texts) addText(tally, text)
  return tally
}

/** The tally's total: its deferred texts are counted in slices, yielding to the event loop between them. */
export const finishTally = (tally: Tally): Effect.Effect<number> => {
  const deferred = tally.deferred
  if (deferred === undefined) return Effect.succeed(tally.tokens)
  return Effect.gen(function* () {
    let total = tally.tokens
    for (const text of deferred) {
      yield* Effect.yieldNow
      total += yield* countTextSliced(text)
    }
    return total
  })
}

/** A message `content`: a string, an array of parts, or null (counted synchronously, whatever its length). */
export const countContent = (content: Json): number => {
  const tally: Tally = { tokens: 0, room: Number.POSITIVE_INFINITY, deferred: undefined }
  addContent(tally, content)
  return tally.tokens
}

/** Input tokens of an OpenAI chat completion request (messages, tool definitions and reply priming). */
export const countOpenAIChat = (request: OpenAIChatInput): number =>
  tallyOpenAIChat(request, Number.POSITIVE_INFINITY).tokens

/** Input tokens of an Anthropic messages request (system, messages, tool definitions and reply priming). */
export const countAnthropicMessages = (request: AnthropicMessagesInput): number =>
  tallyAnthropicMessages(request, Number.POSITIVE_INFINITY).tokens

/** Input tokens of a Gemini request (system instruction, contents, tool declarations and reply priming). */
export const countGeminiContents = (request: GeminiContentsInput): number =>
  tallyGeminiContents(request, Number.POSITIVE_INFINITY).tokens
