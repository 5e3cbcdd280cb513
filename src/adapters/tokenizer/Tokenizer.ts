/**
 * Token counting with the o200k_base BPE (GPT-4o / GPT-5 family). It is exact for OpenAI text and a close, stable
 * estimate for other vendors, which is what holds and the simulator need: the same input always gives the same count.
 */
import { Context, Layer } from "effect"
import { countTokens, encode as encodeO200k, decode as decodeO200k } from "gpt-tokenizer/encoding/o200k_base"

/** Tokens added per chat message for role and framing (OpenAI's published `tokens_per_message` for gpt-4o). */
export const MESSAGE_OVERHEAD_TOKENS = 3
/** Tokens that prime the assistant reply, added once per request. */
export const REPLY_PRIMING_TOKENS = 3
/** Fixed estimate per image part: OpenAI's cost of a 1024×1024 image at `detail: high` (85 + 4 × 170). */
export const IMAGE_TOKENS = 765
/** Fixed estimate per audio or file part whose length cannot be known without decoding it. */
export const ATTACHMENT_TOKENS = 1000

// Vendors treat `<|endoftext|>` in user text as plain text; the library would throw on it by default.
const plainText = { disallowedSpecial: new Set<string>() }

// BPE merges cost superlinear time in the length of one pre-token: a 50,000-character run without a space takes
// seconds and blocks the event loop. Long texts are therefore encoded in chunks of about CHUNK characters, cut only
// before a space that starts a word (o200k's pre-tokenizer never joins across that point, so ordinary text counts
// exactly as in one piece), and a run longer than MAX_RUN without a space is cut every MAX_RUN characters: at most
// one extra token per cut, an over-estimate a hold can carry.
const MAX_RUN = 256
const CHUNK = 4096
const PIECE = new RegExp(` ?[^ ]{1,${MAX_RUN}}| +`, "g")
const LONG_RUN = new RegExp(`[^ ]{${MAX_RUN + 1}}`)

/** Tokens of a plain string (counted without building the token array). */
export const countText = (text: string): number => {
  if (text.length === 0) return 0
  if (text.length <= CHUNK && !LONG_RUN.test(text)) return countTokens(text, plainText)
  let total = 0
  let chunk = ""
  for (const match of text.matchAll(PIECE)) {
    if (chunk.length + match[0].length > CHUNK) {
      total += countTokens(chunk, plainText)
      chunk = ""
    }
    chunk += match[0]
  }
  return chunk.length === 0 ? total : total + countTokens(chunk, plainText)
}

/** The longest prefix of `text` that fits in `maxTokens` tokens (cut on a token boundary). */
export const truncateToTokens = (text: string, maxTokens: number): string => {
  if (maxTokens <= 0) return ""
  const tokens = encodeO200k(text, plainText)
  return tokens.length <= maxTokens ? text : decodeO200k(tokens.slice(0, maxTokens))
}

/** The text split into pieces of about `tokensPerPiece` tokens, for streaming deltas; joining them gives `text`. */
export const splitByTokens = (text: string, tokensPerPiece: number): ReadonlyArray<string> => {
  const tokens = encodeO200k(text, plainText)
  const size = Math.max(1, Math.floor(tokensPerPiece))
  const pieces: Array<string> = []
  let start = 0
  let consumed = 0
  while (start < tokens.length) {
    let end = Math.min(start + size, tokens.length)
    let piece = decodeO200k(tokens.slice(start, end))
    // A multi-byte character can span tokens: grow the piece until it decodes to exactly the next slice of the text.
    while (end < tokens.length && (piece.endsWith("\uFFFD") || !text.startsWith(piece, consumed))) {
      end += 1
      piece = decodeO200k(tokens.slice(start, end))
    }
    const exact = end === tokens.length ? text.slice(consumed) : piece
    pieces.push(exact)
    consumed += exact.length
    start = end
  }
  return pieces
}

type Json = unknown

const isRecord = (value: Json): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const asString = (value: Json): string => (typeof value === "string" ? value : "")

const countJson = (value: Json): number =>
  value === undefined ? 0 : countText(typeof value === "string" ? value : JSON.stringify(value))

const isImagePart = (type: string): boolean =>
  type === "image_url" || type === "image" || type === "input_image" || type === "inlineData" || type === "inline_data"

/** One content part of any of the three dialects. Unknown parts are counted as their JSON text. */
const countPart = (part: Json): number => {
  if (typeof part === "string") return countText(part)
  if (!isRecord(part)) return 0
  const type = asString(part.type)
  if (typeof part.text === "string" && (type === "" || type === "text" || type === "input_text")) {
    return countText(part.text)
  }
  if (isImagePart(type)) return IMAGE_TOKENS
  if (type === "input_audio" || type === "file" || type === "document") return ATTACHMENT_TOKENS
  if (type === "tool_use") return countText(asString(part.name)) + countJson(part.input)
  if (type === "tool_result") return countContent(part.content)
  if (type === "thinking") return countText(asString(part.thinking))
  if (type === "redacted_thinking") return countText(asString(part.data))
  // Gemini parts carry no `type`; the key that is present says what they are.
  const inline = part.inlineData ?? part.inline_data
  if (isRecord(inline)) {
    return asString(inline.mimeType ?? inline.mime_type).startsWith("image/") ? IMAGE_TOKENS : ATTACHMENT_TOKENS
  }
  if (isRecord(part.fileData ?? part.file_data)) return ATTACHMENT_TOKENS
  const call = part.functionCall ?? part.function_call
  if (isRecord(call)) return countText(asString(call.name)) + countJson(call.args)
  const response = part.functionResponse ?? part.function_response
  if (isRecord(response)) return countText(asString(response.name)) + countJson(response.response)
  return countJson(part)
}

/** A message `content`: a string, an array of parts, or null. */
export const countContent = (content: Json): number => {
  if (typeof content === "string") return countText(content)
  if (Array.isArray(content)) return content.reduce((sum: number, part) => sum + countPart(part), 0)
  return 0
}

/** An OpenAI-shaped chat request: the fields that cost input tokens. */
export interface OpenAIChatInput {
  readonly messages: ReadonlyArray<unknown>
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

const countOpenAIMessage = (message: Json): number => {
  if (!isRecord(message)) return 0
  let tokens = MESSAGE_OVERHEAD_TOKENS + countText(asString(message.role)) + countContent(message.content)
  if (typeof message.name === "string") tokens += countText(message.name) + 1
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      const fn = isRecord(call) && isRecord(call.function) ? call.function : {}
      tokens += countText(asString(fn.name)) + countText(asString(fn.arguments))
    }
  }
  const reasoning = message.reasoning_content ?? message.reasoning
  if (typeof reasoning === "string") tokens += countText(reasoning)
  return tokens
}

/** Input tokens of an OpenAI chat completion request (messages, tool definitions and reply priming). */
export const countOpenAIChat = (request: OpenAIChatInput): number =>
  request.messages.reduce((sum: number, message) => sum + countOpenAIMessage(message), 0) +
  (request.tools && request.tools.length > 0 ? countJson(request.tools) : 0) +
  REPLY_PRIMING_TOKENS

/** An Anthropic-shaped messages request: the fields that cost input tokens. */
export interface AnthropicMessagesInput {
  readonly messages: ReadonlyArray<unknown>
  readonly system?: unknown
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

/** Input tokens of an Anthropic messages request (system, messages, tool definitions and reply priming). */
export const countAnthropicMessages = (request: AnthropicMessagesInput): number =>
  (request.system === undefined || request.system === null ? 0 : countContent(request.system)) +
  request.messages.reduce(
    (sum: number, message) => sum + (isRecord(message) ? MESSAGE_OVERHEAD_TOKENS + countContent(message.content) : 0),
    0
  ) +
  (request.tools && request.tools.length > 0 ? countJson(request.tools) : 0) +
  REPLY_PRIMING_TOKENS

/** A Gemini `generateContent` request: the fields that cost input tokens. */
export interface GeminiContentsInput {
  readonly contents: ReadonlyArray<unknown>
  readonly systemInstruction?: unknown
  readonly tools?: ReadonlyArray<unknown> | null | undefined
}

const countGeminiContent = (content: Json): number =>
  isRecord(content) && Array.isArray(content.parts) ? countContent(content.parts) : countContent(content)

/** Input tokens of a Gemini request (system instruction, contents, tool declarations and reply priming). */
export const countGeminiContents = (request: GeminiContentsInput): number =>
  (request.systemInstruction === undefined ? 0 : countGeminiContent(request.systemInstruction)) +
  request.contents.reduce((sum: number, content) => sum + MESSAGE_OVERHEAD_TOKENS + countGeminiContent(content), 0) +
  (request.tools && request.tools.length > 0 ? countJson(request.tools) : 0) +
  REPLY_PRIMING_TOKENS

/** Token counting as a service, so callers that want a different encoding can swap the layer. */
export class Tokenizer extends Context.Service<
  Tokenizer,
  {
    readonly countText: (text: string) => number
    readonly countContent: (content: unknown) => number
    readonly countOpenAIChat: (request: OpenAIChatInput) => number
    readonly countAnthropicMessages: (request: AnthropicMessagesInput) => number
    readonly countGeminiContents: (request: GeminiContentsInput) => number
    readonly truncateToTokens: (text: string, maxTokens: number) => string
  }
>()("tollgate/adapters/tokenizer/Tokenizer") {
  static readonly layer: Layer.Layer<Tokenizer> = Layer.succeed(
    Tokenizer,
    Tokenizer.of({
      countText,
      countContent,
      countOpenAIChat,
      countAnthropicMessages,
      countGeminiContents,
      truncateToTokens
    })
  )
}
