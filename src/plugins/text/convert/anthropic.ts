/**
 * Anthropic Messages ↔ IR.
 *
 * Lossy cases (Anthropic client → IR → other upstream, and IR → Anthropic upstream):
 * - Rejected with a ConvertError: `document` blocks, `file` image sources, server-tool blocks (`server_tool_use`,
 *   `web_search_tool_result`, ...) inside messages, tool results containing anything but text/images, unknown block
 *   types and roles, tool results without a preceding call.
 * - Dropped: `cache_control` everywhere, `citations`, `service_tier`, `container`, `inference_geo`, `thinking.display`,
 *   server tools in `tools` (the other upstream cannot run them), top-level `cache_control`.
 * - Mid-conversation `system` messages are hoisted into the system prompt.
 * - `output_config.effort` without `thinking` reads back as "thinking derived from effort"; the JSON schema format has no
 *   name/description/strict on Anthropic (IR → Anthropic drops them). `json_object` becomes a system instruction.
 * - IR → Anthropic request: `max_tokens` defaults to `defaultMaxTokens`; `tool_choice` is omitted without tools; temperature is clamped to 0..1 and, like
 *   `top_p`, omitted when thinking is on; thinking is dropped when `tool_choice` forces a tool (Anthropic rejects the
 *   pair) or when `max_tokens` leaves no room for the minimum 1024-token budget; an effort becomes a budget from
 *   `EFFORT_BUDGETS`; thinking parts without a genuine Anthropic signature (Gemini's, synthetic `gw1.` or none) are
 *   stripped; a Gemini signature packed in a tool id is dropped (see thinkingSignature.ts);
 *   empty text parts and empty assistant turns are dropped; tool ids are sanitized (`toolId.ts`).
 * - IR → Anthropic response: unsigned thinking gets a synthetic `gw1.` signature, a Gemini one is wrapped as
 *   `gw1.gemini.…`, a call's Gemini signature is packed in its id; `stop_sequence` is null unless known.
 * - Anthropic → IR response: server-tool blocks and citations are dropped.
 */
import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  ImageSource,
  Message,
  StopReason,
  ThinkingMode,
  ToolResultPart,
  Usage,
  UserPart
} from "./ChatIR.ts"
import { convertError } from "./ChatIR.ts"
import { asCount, asRecord, compact, JSON_OBJECT_INSTRUCTION, type JsonRecord } from "./json.ts"
import { sanitizeToolId } from "./toolId.ts"
import { WEB_SEARCH_TOOL, wantsWebSearch, webSearchRequests } from "./anthropicWebSearch.ts"

export interface AnthropicRequestOptions {
  /** Anthropic requires `max_tokens`; used when the client gave none. */
  readonly defaultMaxTokens: number
  /** Newer Claude models reject non-default sampling parameters; `omit` strips temperature/top_p/top_k. */
  readonly samplingParams?: "keep" | "omit"
}

/** Thinking budget chosen for an OpenAI-style effort (a gateway policy). */
export const EFFORT_BUDGETS: Readonly<Record<string, number>> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 24576,
  xhigh: 32768,
  max: 65536
}

const MIN_THINKING_BUDGET = 1024
const KNOWN_STOP_REASONS = new Set([
  "end_turn",
  "max_tokens",
  "stop_sequence",
  "tool_use",
  "pause_turn",
  "refusal",
  "model_context_window_exceeded"
])

export const stopReasonToAnthropic = (stop: StopReason): string =>
  KNOWN_STOP_REASONS.has(stop) ? stop : stop === "content_filter" ? "refusal" : "end_turn"

/**
 * Cache writes are `cache_creation_input_tokens`; `cache_creation` splits them by time to live (5 minutes, 1 hour),
 * which are priced apart. Without the split every write counts as a 5-minute one.
 */
export const anthropicUsageToIR = (raw: unknown): Usage => {
  const usage = asRecord(raw)
  const cacheWrite = asCount(usage.cache_creation_input_tokens)
  const oneHour = Math.min(cacheWrite, asCount(asRecord(usage.cache_creation).ephemeral_1h_input_tokens))
  const searches = webSearchRequests(usage)
  return {
    inputTokens: asCount(usage.input_tokens),
    outputTokens: asCount(usage.output_tokens),
    cacheReadTokens: asCount(usage.cache_read_input_tokens),
    cacheWriteTokens: cacheWrite,
    ...(oneHour > 0 ? { cacheWrite1hTokens: oneHour } : {}),
    reasoningTokens: asCount(asRecord(usage.output_tokens_details).thinking_tokens),
    ...(searches === undefined ? {} : { webSearches: searches })
  }
}

/** Anthropic's `cache_creation` split of the cache writes. */
export const cacheCreationOf = (usage: Usage): JsonRecord => {
  const oneHour = usage.cacheWrite1hTokens ?? 0
  return { ephemeral_5m_input_tokens: usage.cacheWriteTokens - oneHour, ephemeral_1h_input_tokens: oneHour }
}

export const irUsageToAnthropic = (usage: Usage): JsonRecord =>
  compact({
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
    cache_creation: cacheCreationOf(usage),
    output_tokens: usage.outputTokens,
    output_tokens_details: usage.reasoningTokens > 0 ? { thinking_tokens: usage.reasoningTokens } : undefined
  })

// ---------------------------------------------------------------------------------------------------------------
// request: IR → Anthropic

const imageToAnthropic = (source: ImageSource, param: string): Converted<JsonRecord> => {
  if (source.kind === "url") return Result.succeed({ type: "image", source: { type: "url", url: source.url } })
  if (!["image/jpeg", "image/png", "image/gif", "image/webp"].includes(source.mediaType)) {
    return convertError(param, `image type '${source.mediaType}' is not supported by Anthropic`)
  }
  return Result.succeed({ type: "image", source: { type: "base64", media_type: source.mediaType, data: source.data } })
}

const userBlocks = (parts: ReadonlyArray<UserPart>, param: string): Converted<Array<JsonRecord>> => {
  const blocks: Array<JsonRecord> = []
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j]
    if (part.type === "text") blocks.push({ type: "text", text: part.text })
    else {
      const image = imageToAnthropic(part.source, `${param}.${j}`)
      if (Result.isFailure(image)) return Result.fail(image.failure)
      blocks.push(image.success)
    }
  }
  return Result.succeed(blocks)
}

const simplify = (blocks: ReadonlyArray<JsonRecord>): string | ReadonlyArray<JsonRecord> =>
  blocks.length === 1 && blocks[0].type === "text" && typeof blocks[0].text === "string" ? blocks[0].text : blocks

const assistantBlockOf = (part: AssistantPart): ReadonlyArray<JsonRecord> => {
  switch (part.type) {
    case "text":
      return part.text === "" ? [] : [{ type: "text", text: part.text }]
    case "thinking":
      // A block Anthropic did not sign would be rejected (400); reasoning from other vendors cannot be replayed here.
      return part.signatureOrigin === "anthropic" && part.signature !== undefined
        ? [{ type: "thinking", thinking: part.text, signature: part.signature }]
        : []
    case "redacted_thinking":
      return [{ type: "redacted_thinking", data: part.data }]
    case "tool_call":
      return [{ type: "tool_use", id: sanitizeToolId(part.id), name: part.name, input: part.input }]
  }
}

const assistantBlocks = (parts: ReadonlyArray<AssistantPart>): Array<JsonRecord> => parts.flatMap(assistantBlockOf)

const toolResultBlocks = (results: ReadonlyArray<ToolResultPart>, param: string): Converted<Array<JsonRecord>> => {
  const blocks: Array<JsonRecord> = []
  for (const result of results) {
    const content = userBlocks(result.content, param)
    if (Result.isFailure(content)) return Result.fail(content.failure)
    blocks.push(
      compact({
        type: "tool_result",
        tool_use_id: sanitizeToolId(result.toolCallId),
        content: simplify(content.success),
        is_error: result.isError ? true : undefined
      })
    )
  }
  return Result.succeed(blocks)
}

const messagesToAnthropic = (messages: ReadonlyArray<Message>): Converted<Array<JsonRecord>> => {
  const out: Array<JsonRecord> = []
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    const param = `messages.${i}.content`
    if (message.role === "user") {
      const blocks = userBlocks(message.content, param)
      if (Result.isFailure(blocks)) return Result.fail(blocks.failure)
      out.push({ role: "user", content: simplify(blocks.success) })
    } else if (message.role === "assistant") {
      const blocks = assistantBlocks(message.content)
      if (blocks.length > 0) out.push({ role: "assistant", content: simplify(blocks) })
    } else {
      const blocks = toolResultBlocks(message.content, param)
      if (Result.isFailure(blocks)) return Result.fail(blocks.failure)
      // Tool results must open the user turn that follows the tool_use turn; user content after them joins it.
      const next = messages[i + 1]
      if (next?.role === "user") {
        const rest = userBlocks(next.content, `messages.${i + 1}.content`)
        if (Result.isFailure(rest)) return Result.fail(rest.failure)
        blocks.success.push(...rest.success)
        i++
      }
      out.push({ role: "user", content: blocks.success })
    }
  }
  return Result.succeed(out)
}

const toolChoiceToAnthropic = (request: ChatRequest): JsonRecord | undefined => {
  // Anthropic rejects tool_choice without tools (400).
  if (request.tools.length === 0) return undefined
  const choice = request.toolChoice
  if (choice?.type === "none") return { type: "none" }
  const disable =
    request.parallelToolCalls === false ? true : request.parallelToolCalls === true && choice ? false : undefined
  if (choice === undefined) return disable === true ? { type: "auto", disable_parallel_tool_use: true } : undefined
  return compact({
    type: choice.type,
    name: choice.type === "tool" ? choice.name : undefined,
    disable_parallel_tool_use: disable
  })
}

const thinkingToAnthropic = (request: ChatRequest, maxTokens: number): ThinkingMode | undefined => {
  const reasoning = request.reasoning
  if (reasoning === undefined) return undefined
  const forced = request.toolChoice?.type === "any" || request.toolChoice?.type === "tool"
  const wanted: ThinkingMode | undefined =
    reasoning.thinking ??
    (reasoning.effort === undefined || reasoning.effort === "none"
      ? undefined
      : { type: "enabled", budgetTokens: EFFORT_BUDGETS[reasoning.effort] ?? EFFORT_BUDGETS.medium })
  if (wanted === undefined || wanted.type === "disabled") return wanted
  if (forced) return undefined
  if (wanted.type === "adaptive") return wanted
  const budget = Math.min(wanted.budgetTokens, maxTokens - 1)
  return budget < MIN_THINKING_BUDGET ? undefined : { type: "enabled", budgetTokens: budget }
}

export const irToAnthropicRequest = (request: ChatRequest, options: AnthropicRequestOptions): Converted<JsonRecord> => {
  const messages = messagesToAnthropic(request.messages)
  if (Result.isFailure(messages)) return Result.fail(messages.failure)
  const maxTokens = request.maxTokens ?? options.defaultMaxTokens
  const system = [...request.system.map((p) => ({ type: "text", text: p.text }))]
  if (request.responseFormat?.type === "json_object") system.push({ type: "text", text: JSON_OBJECT_INSTRUCTION })
  const thinking = thinkingToAnthropic(request, maxTokens)
  const thinkingOn = thinking !== undefined && thinking.type !== "disabled"
  const sampling = options.samplingParams !== "omit"
  const format = request.responseFormat?.type === "json_schema" ? request.responseFormat : undefined
  const effort = request.reasoning?.thinking !== undefined ? request.reasoning.effort : undefined
  const tools: Array<unknown> = request.tools.map((t) =>
    compact({
      name: t.name,
      description: t.description,
      input_schema: { type: "object", ...t.parameters },
      strict: t.strict
    })
  )
  // A hosted web search asked for in another protocol runs as Anthropic's own (anthropicWebSearch.ts).
  if (wantsWebSearch(request)) tools.push(WEB_SEARCH_TOOL)
  const outputConfig = compact({
    effort,
    format: format === undefined ? undefined : { type: "json_schema", schema: format.schema }
  })
  return Result.succeed(
    compact({
      model: request.model,
      max_tokens: maxTokens,
      system: system.length === 0 ? undefined : simplify(system),
      messages: messages.success,
      tools: tools.length > 0 ? tools : undefined,
      tool_choice: toolChoiceToAnthropic(request),
      stop_sequences: request.stop,
      temperature:
        sampling && !thinkingOn && request.temperature !== undefined
          ? Math.min(1, Math.max(0, request.temperature))
          : undefined,
      top_p: sampling && !thinkingOn ? request.topP : undefined,
      top_k: sampling && !thinkingOn ? request.topK : undefined,
      thinking:
        thinking === undefined
          ? undefined
          : thinking.type === "enabled"
            ? { type: "enabled", budget_tokens: thinking.budgetTokens }
            : { type: thinking.type },
      output_config: Object.keys(outputConfig).length > 0 ? outputConfig : undefined,
      metadata: request.user === undefined ? undefined : { user_id: request.user },
      stream: request.stream ? true : undefined
    })
  )
}
