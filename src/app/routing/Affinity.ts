/**
 * Prompt-cache affinity: the key that keeps one conversation on one deployment, so the vendor's prompt cache there
 * stays warm. A conversation is an API key plus what its requests share at the start: an explicit cache key
 * (`prompt_cache_key`, Gemini's `cachedContent`) when the client gave one, else the leading text of the prompt
 * (system, tools, then messages) when the client marked cache breakpoints (Anthropic `cache_control`) or the prompt
 * is long enough for a vendor to cache at all (1,024 tokens, OpenAI's and Anthropic's minimum). A shorter
 * conversation is kept together by its trail: its next turn repeats its whole prompt as a prefix, so it goes where
 * that prompt went (remembered by the instance). Other requests are spread by weight.
 */
import { createHash } from "node:crypto"
import type { ChatRequest, PluginModel } from "../../plugins/ModelPlugin.ts"
import type { RouteHint } from "./Deployments.ts"

/** Vendors cache prompts from this length on; below it, affinity buys nothing. */
export const CACHEABLE_PROMPT_TOKENS = 1024

/** How much of the prompt's start names the conversation: a cacheable prompt (1,024 tokens) is at least this long. */
const PREFIX_CHARS = 1024

type Piece = { readonly text: string } | { readonly end: "message" }

const partText = (part: ChatRequest["messages"][number]["content"][number]): string =>
  part.type === "text" || part.type === "thinking"
    ? part.text
    : part.type === "image"
      ? part.source.kind === "url"
        ? part.source.url
        : part.source.data.slice(0, 256)
      : part.type === "tool_call"
        ? `${part.id}${part.name}${JSON.stringify(part.input)}`
        : part.type === "tool_result"
          ? `${part.toolCallId}${part.content.map((item) => (item.type === "text" ? item.text : "")).join("")}`
          : part.data.slice(0, 256)

/** The prompt as a vendor would cache it, in order: system, tools, then each message, with its end marked. */
function* piecesOf(request: ChatRequest): Generator<Piece> {
  for (const part of request.system) yield { text: part.text }
  for (const tool of request.tools) yield { text: `${tool.name}${JSON.stringify(tool.parameters)}` }
  for (const message of request.messages) {
    yield { text: message.role }
    for (const part of message.content) yield { text: partText(part) }
    yield { end: "message" }
  }
}

/** The leading `limit` characters of the prompt. */
const leadingText = (request: ChatRequest, limit: number): string => {
  let text = ""
  for (const piece of piecesOf(request)) {
    if ("end" in piece) continue
    text += `${piece.text}\u0000`
    if (text.length >= limit) return text.slice(0, limit)
  }
  return text
}

/** Past this much prompt text, a conversation is long enough to be routed by its leading text instead. */
const TRAIL_CHARS = 64 * 1024

/**
 * A conversation's trail: a digest of the prompt after each of its messages but the last (`continues`, longest
 * first), and of the whole prompt (`whole`). A request whose `continues` holds an earlier request's `whole` is that
 * conversation's next turn, and goes where the earlier one went. A first turn, or a request repeated as is, continues
 * nothing and is spread by weight.
 */
export const conversationTrail = (
  keyId: string,
  request: ChatRequest
): { readonly continues: ReadonlyArray<string>; readonly whole: string } | undefined => {
  const hash = createHash("sha256").update(keyId)
  const boundaries: Array<string> = []
  let length = 0
  for (const piece of piecesOf(request)) {
    if ("end" in piece) {
      boundaries.push(hash.copy().digest("base64url").slice(0, 22))
      continue
    }
    length += piece.text.length
    if (length > TRAIL_CHARS) return undefined
    hash.update(piece.text).update("\u0000")
  }
  const whole = boundaries.pop()
  return whole === undefined ? undefined : { continues: boundaries.reverse(), whole }
}

const digest = (text: string): string => createHash("sha256").update(text).digest("base64url").slice(0, 22)

/** Whether an Anthropic body marks a cache breakpoint anywhere (system, tools or message parts). */
const marksCacheBreakpoints = (body: Readonly<Record<string, unknown>>): boolean => {
  const marked = (value: unknown): boolean =>
    Array.isArray(value) &&
    value.some(
      (item) =>
        typeof item === "object" &&
        item !== null &&
        ("cache_control" in item ||
          ("content" in item &&
            Array.isArray((item as { content: unknown }).content) &&
            marked((item as { content: unknown }).content)))
    )
  return marked(body.system) || marked(body.tools) || marked(body.messages)
}

/** The affinity key of a chat request by `keyId`, or undefined when it has no cache worth keeping warm. */
export const affinityKey = (
  keyId: string,
  request: ChatRequest,
  client: { readonly dialect: string; readonly body: Readonly<Record<string, unknown>> },
  inputTokens: number
): string | undefined => {
  if (request.promptCacheKey !== undefined) return `${keyId}:key:${digest(request.promptCacheKey)}`
  if (request.cachedContent !== undefined) return `${keyId}:cached:${digest(request.cachedContent)}`
  const marked = client.dialect === "anthropic" && marksCacheBreakpoints(client.body)
  if (!marked && inputTokens < CACHEABLE_PROMPT_TOKENS) return undefined
  return `${keyId}:prefix:${digest(leadingText(request, PREFIX_CHARS))}`
}

/** What routing needs to keep a conversation together (see `RouteHint.conversation`). */
export interface Conversation {
  readonly affinity: string | undefined
  readonly trail: ReturnType<typeof conversationTrail>
}

/**
 * How a chat call is routed: its conversation (affinity and trail, digested only if routing asks), the most tokens
 * it can use (its input and the output it may write), and whether it streams.
 */
export const chatRouteHint = (
  keyId: string,
  request: ChatRequest,
  client: { readonly dialect: string; readonly body: Readonly<Record<string, unknown>> },
  inputTokens: number,
  model: PluginModel
): RouteHint => ({
  conversation: () => ({
    affinity: affinityKey(keyId, request, client, inputTokens),
    trail: conversationTrail(keyId, request)
  }),
  tokens: inputTokens + (request.maxTokens ?? model.maxOutputTokens),
  streamed: request.stream
})
