/**
 * OpenAI Chat Completions ↔ IR.
 *
 * Lossy cases (OpenAI client → IR → other upstream, and IR → OpenAI):
 * - Rejected with a ConvertError: `n > 1`, `input_audio` and `file` parts, custom (`type:"custom"`) tools and tool
 *   calls, the deprecated `function` role, unknown roles and content part types, tool-call `arguments` that are not a
 *   JSON object, tool messages without a preceding call.
 * - Dropped: `seed`, `logprobs`/`top_logprobs`, `logit_bias`, penalties, `modalities`/`audio`, `prediction`, `store`,
 *   `metadata`, `service_tier`, `verbosity`, `web_search_options`, message `name`, image `detail`,
 *   `stream_options.include_obfuscation`, the deprecated `functions`/`function_call`. `allowed_tools` becomes a
 *   filtered tool list plus auto/any.
 * - `system` and `developer` messages anywhere in the list are hoisted, in order, into the IR system prompt; the
 *   encoder writes them back as one message with the role given by `systemRole`.
 * - Assistant turns: OpenAI can only say reasoning → text → tool calls, so IR part order is normalised to that, several
 *   text parts are kept only as a text-part array, several thinking parts are joined by "\n", thinking signatures and
 *   `redacted_thinking` are dropped, `refusal` becomes text. A tool call's Gemini signature travels to OpenAI clients in
 *   its id and is unpacked when it comes back (see thinkingSignature.ts); upstreams get the ids they issued.
 * - Tool results: OpenAI tool messages are text only; images in a tool result move to a user message right after the
 *   tool messages, and `isError` becomes an "Error: " text prefix.
 * - Responses: only `choices[0]` is read; `finish_reason` "stop" cannot tell end_turn from stop_sequence; invalid
 *   tool-call arguments in an upstream response become `{}`; `annotations`, `logprobs`, `service_tier`,
 *   `system_fingerprint` are dropped. IR → OpenAI response joins all text parts into one string and prefixes another
 *   vendor's id with `chatcmpl-`.
 * - IR → OpenAI request: `tool_choice`/`parallel_tool_calls` are omitted without tools.
 * - `top_k` (Anthropic/Gemini) has no OpenAI field and is dropped; an Anthropic prefill (trailing assistant turn) is
 *   sent as an ordinary assistant message; a `stop_sequence` stop reason becomes `stop`; stop sequences beyond OpenAI's
 *   limit of 4 are dropped.
 */
import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  ImagePart,
  ResponseFormat,
  StopReason,
  TextPart,
  ToolCallPart,
  ToolChoice,
  ToolResultPart,
  Usage,
  UserPart
} from "./ChatIR.ts"
import { imageSourceToUrl } from "./dataUrl.ts"
import { packToolId } from "./thinkingSignature.ts"
import { asCount, asRecord, compact, JSON_OBJECT_INSTRUCTION, type JsonRecord } from "./json.ts"
import { reasoningFieldOf } from "./openaiRequestToIR.ts"

export type ReasoningField = "reasoning_content" | "reasoning" | "none"

export interface OpenAIRequestOptions {
  /** `developer` for o-series models; default `system`. */
  readonly systemRole?: "system" | "developer"
  /** Default `max_completion_tokens`; older OpenAI-compatible servers only know `max_tokens`. */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens"
  /** Where assistant thinking goes back to the upstream (DeepSeek requires `reasoning_content`). Default `reasoning_content`. */
  readonly reasoningField?: ReasoningField
  /** Ask the upstream for usage in streams even if the client did not (billing needs it). Default true. */
  readonly forceIncludeUsage?: boolean
}

export interface OpenAIResponseOptions {
  /** Unix seconds; the converter has no clock. */
  readonly created: number
  /** Overrides the IR id (e.g. a `chatcmpl-` id made by the caller). */
  readonly id?: string
  readonly reasoningField?: ReasoningField
}

// ---------------------------------------------------------------------------------------------------------------
// mapping tables

/** Tool use is decided by the presence of calls (a named tool_choice reports "stop"), except when the output was cut. */
export const openAIFinishToStopReason = (finish: unknown, sawToolCalls: boolean): StopReason => {
  if (finish === "length") return "max_tokens"
  if (sawToolCalls) return "tool_use"
  switch (finish) {
    case "content_filter":
      return "refusal"
    default:
      return "end_turn"
  }
}

/** A cut-off tool call reports `length`, so the client does not run a call whose arguments are incomplete. */
export const stopReasonToOpenAIFinish = (stop: StopReason, hasToolCalls: boolean): string => {
  if (stop === "max_tokens" || stop === "model_context_window_exceeded") return "length"
  if (hasToolCalls) return "tool_calls"
  switch (stop) {
    case "refusal":
    case "content_filter":
      return "content_filter"
    default:
      return "stop"
  }
}

export const openAIUsageToIR = (raw: unknown): Usage => {
  const usage = asRecord(raw)
  const promptDetails = asRecord(usage.prompt_tokens_details)
  const completionDetails = asRecord(usage.completion_tokens_details)
  const cacheRead = asCount(promptDetails.cached_tokens)
  const cacheWrite = asCount(promptDetails.cache_write_tokens)
  return {
    inputTokens: Math.max(0, asCount(usage.prompt_tokens) - cacheRead - cacheWrite),
    outputTokens: asCount(usage.completion_tokens),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: asCount(completionDetails.reasoning_tokens)
  }
}

export const irUsageToOpenAI = (usage: Usage): JsonRecord => {
  const prompt = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: compact({
      cached_tokens: usage.cacheReadTokens,
      cache_write_tokens: usage.cacheWriteTokens > 0 ? usage.cacheWriteTokens : undefined
    }),
    completion_tokens_details: { reasoning_tokens: usage.reasoningTokens }
  }
}

const effortFromBudget = (budget: number): string => (budget < 4096 ? "low" : budget < 16384 ? "medium" : "high")

// ---------------------------------------------------------------------------------------------------------------
// request: IR → OpenAI

const textContent = (parts: ReadonlyArray<TextPart>): string | ReadonlyArray<JsonRecord> =>
  parts.length === 1 ? parts[0].text : parts.map((p) => ({ type: "text", text: p.text }))

const userContent = (parts: ReadonlyArray<UserPart>): string | ReadonlyArray<JsonRecord> =>
  parts.length === 1 && parts[0].type === "text"
    ? parts[0].text
    : parts.map((p) =>
        p.type === "text"
          ? { type: "text", text: p.text }
          : { type: "image_url", image_url: { url: imageSourceToUrl(p.source) } }
      )

/** Towards an upstream the id goes as issued; towards a client it carries the call's Gemini signature, if any. */
export const toolCallToOpenAI = (call: ToolCallPart, toClient = false): JsonRecord => ({
  id: toClient ? packToolId(call.id, call.signature) : call.id,
  type: "function",
  function: { name: call.name, arguments: JSON.stringify(call.input) }
})

const assistantToOpenAI = (content: ReadonlyArray<AssistantPart>, reasoningField: ReasoningField): JsonRecord => {
  const texts = content.filter((p): p is TextPart => p.type === "text")
  const calls = content.filter((p): p is ToolCallPart => p.type === "tool_call")
  return compact({
    role: "assistant",
    content: texts.length > 0 ? textContent(texts) : calls.length > 0 ? null : "",
    tool_calls: calls.length > 0 ? calls.map((call) => toolCallToOpenAI(call)) : undefined,
    ...reasoningFieldOf(content, reasoningField)
  })
}

const toolResultsToOpenAI = (results: ReadonlyArray<ToolResultPart>): ReadonlyArray<JsonRecord> => {
  const images: Array<ImagePart> = []
  const out: Array<JsonRecord> = results.map((result) => {
    const texts = result.content.filter((p): p is TextPart => p.type === "text")
    images.push(...result.content.filter((p): p is ImagePart => p.type === "image"))
    const labelled: ReadonlyArray<TextPart> = result.isError
      ? [{ type: "text", text: "Error: " + texts.map((t) => t.text).join("\n") }]
      : texts
    return {
      role: "tool",
      tool_call_id: result.toolCallId,
      content: labelled.length === 0 ? "" : textContent(labelled)
    }
  })
  if (images.length > 0) out.push({ role: "user", content: userContent(images) })
  return out
}

const toolChoiceToOpenAI = (choice: ToolChoice): unknown => {
  switch (choice.type) {
    case "auto":
      return "auto"
    case "any":
      return "required"
    case "none":
      return "none"
    case "tool":
      return { type: "function", function: { name: choice.name } }
  }
}

const responseFormatToOpenAI = (format: ResponseFormat): JsonRecord =>
  format.type === "json_schema"
    ? {
        type: "json_schema",
        json_schema: compact({
          name: format.name ?? "output",
          description: format.description,
          schema: format.schema,
          strict: format.strict
        })
      }
    : { type: format.type }

const effortOf = (request: ChatRequest): string | undefined => {
  const reasoning = request.reasoning
  if (reasoning === undefined) return undefined
  if (reasoning.effort !== undefined) return reasoning.effort
  return reasoning.thinking?.type === "enabled" ? effortFromBudget(reasoning.thinking.budgetTokens) : undefined
}

export const mentionsJson = (request: ChatRequest): boolean => {
  const says = (text: string) => /json/i.test(text)
  if (request.system.some((part) => says(part.text))) return true
  return request.messages.some((message) =>
    message.content.some((part) => (part.type === "text" ? says(part.text) : false))
  )
}

export const irToOpenAIRequest = (request: ChatRequest, options: OpenAIRequestOptions = {}): Converted<JsonRecord> => {
  const reasoningField = options.reasoningField ?? "reasoning_content"
  const messages: Array<JsonRecord> = []
  // OpenAI refuses `json_object` unless a message says "json"; Gemini's JSON mode and Anthropic's JSON instruction
  // carry no such word, so a converted request says it in its system message.
  const system =
    request.responseFormat?.type === "json_object" && !mentionsJson(request)
      ? [...request.system, { type: "text" as const, text: JSON_OBJECT_INSTRUCTION }]
      : request.system
  if (system.length > 0) {
    messages.push({ role: options.systemRole ?? "system", content: textContent(system) })
  }
  for (const message of request.messages) {
    if (message.role === "user") messages.push({ role: "user", content: userContent(message.content) })
    else if (message.role === "assistant") messages.push(assistantToOpenAI(message.content, reasoningField))
    else messages.push(...toolResultsToOpenAI(message.content))
  }
  const includeUsage = (options.forceIncludeUsage ?? true) ? true : request.includeUsage
  return Result.succeed(
    compact({
      model: request.model,
      messages,
      tools:
        request.tools.length > 0
          ? request.tools.map((t) => ({
              type: "function",
              function: compact({
                name: t.name,
                description: t.description,
                parameters: t.parameters,
                strict: t.strict
              })
            }))
          : undefined,
      // OpenAI rejects tool_choice and parallel_tool_calls without tools (400).
      tool_choice:
        request.toolChoice === undefined || request.tools.length === 0
          ? undefined
          : toolChoiceToOpenAI(request.toolChoice),
      parallel_tool_calls: request.tools.length === 0 ? undefined : request.parallelToolCalls,
      [options.maxTokensField ?? "max_completion_tokens"]: request.maxTokens,
      stop: request.stop?.slice(0, 4),
      temperature: request.temperature,
      top_p: request.topP,
      response_format:
        request.responseFormat === undefined ? undefined : responseFormatToOpenAI(request.responseFormat),
      reasoning_effort: effortOf(request),
      stream: request.stream ? true : undefined,
      stream_options: request.stream && includeUsage !== undefined ? { include_usage: includeUsage } : undefined,
      user: request.user,
      prompt_cache_key: request.promptCacheKey
    })
  )
}
