/**
 * OpenAI's Responses API ↔ IR: the request the gateway sends an `openai-responses` upstream for a client of another
 * protocol, the usage and status mappings, and the output items both directions share.
 *
 * Lossy cases:
 * - IR → Responses request: `stop` sequences and `top_k` have no field and are dropped; thinking from another vendor
 *   cannot go to OpenAI (its reasoning items need OpenAI's own `encrypted_content`) and is dropped; the request is sent
 *   with `store: false` and asks for `reasoning.encrypted_content`, so reasoning carries across turns without OpenAI
 *   keeping anything (the gateway stores conversations itself).
 * - Output items of built-in tools (web search, file search, …) have no IR form and are dropped when converted.
 */
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  StopReason,
  ToolCallPart,
  ToolResultPart,
  Usage,
  UserPart,
  WebSearch
} from "./ChatIR.ts"
import { Result } from "effect"
import { imageSourceToUrl } from "./dataUrl.ts"
import { asCount, asRecord, compact, fnv1a, JSON_OBJECT_INSTRUCTION, type JsonRecord } from "./json.ts"
import { packToolId, responsesEncrypted } from "./thinkingSignature.ts"
import type { ToolNames } from "./toolNamespaces.ts"

/**
 * A Response's usage in the IR. The searches its hosted web search ran are not in `usage` but in `output` (one
 * `web_search_call` item each), and are billed apart (the `webSearch` price).
 */
export const responsesUsageToIR = (raw: unknown, output?: unknown): Usage => {
  const usage = asRecord(raw)
  const details = asRecord(usage.input_tokens_details)
  const cacheRead = asCount(details.cached_tokens)
  const cacheWrite = asCount(details.cache_write_tokens)
  const searches = Array.isArray(output) ? output.filter((item) => asRecord(item).type === "web_search_call").length : 0
  return {
    inputTokens: Math.max(0, asCount(usage.input_tokens) - cacheRead - cacheWrite),
    outputTokens: asCount(usage.output_tokens),
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    reasoningTokens: asCount(asRecord(usage.output_tokens_details).reasoning_tokens),
    ...(searches > 0 ? { webSearches: searches } : {})
  }
}

export const irUsageToResponses = (usage: Usage): JsonRecord => {
  const input = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: usage.cacheReadTokens, cache_write_tokens: usage.cacheWriteTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: input + usage.outputTokens
  }
}

/** A response's `status` and `incomplete_details` for how the model stopped. */
export const statusOf = (
  stop: StopReason
): { readonly status: string; readonly incomplete_details: JsonRecord | null } =>
  stop === "max_tokens" || stop === "model_context_window_exceeded"
    ? { status: "incomplete", incomplete_details: { reason: "max_output_tokens" } }
    : stop === "content_filter"
      ? { status: "incomplete", incomplete_details: { reason: "content_filter" } }
      : stop === "error"
        ? { status: "failed", incomplete_details: null }
        : { status: "completed", incomplete_details: null }

export const stopReasonOf = (status: unknown, incomplete: unknown, sawToolCalls: boolean): StopReason => {
  if (status === "incomplete") {
    return asRecord(incomplete).reason === "content_filter" ? "content_filter" : "max_tokens"
  }
  if (status === "failed") return "error"
  return sawToolCalls ? "tool_use" : "end_turn"
}

/** Stable item ids for output the gateway converted (the response id makes them unique across responses). */
export const itemId = (prefix: "msg" | "rs" | "fc" | "ws", responseId: string, index: number): string =>
  `${prefix}_${fnv1a(`${responseId}:${index}`)}${fnv1a(`${index}:${responseId}`)}`

export const reasoningItem = (part: AssistantPart, id: string): JsonRecord => {
  const encrypted =
    part.type === "redacted_thinking"
      ? responsesEncrypted({ type: "redacted", data: part.data })
      : part.type === "thinking" && part.signature !== undefined && part.signatureOrigin !== undefined
        ? responsesEncrypted({ type: "signed", signature: part.signature, origin: part.signatureOrigin })
        : undefined
  const text = part.type === "thinking" ? part.text : ""
  return compact({
    id,
    type: "reasoning",
    summary: text === "" ? [] : [{ type: "summary_text", text }],
    encrypted_content: encrypted
  })
}

/** A web search the vendor ran, as OpenAI's hosted search reports one. */
export const webSearchCallItem = (search: WebSearch, id: string): JsonRecord => ({
  id,
  type: "web_search_call",
  status: "completed",
  action: { type: "search", query: search.query, sources: search.sources.map((s) => ({ type: "url", url: s.url })) }
})

/** A web search's stream events, as OpenAI streams one: the item added, in progress, searching, completed, done. */
export const webSearchEvents = (item: JsonRecord, index: number): ReadonlyArray<readonly [string, JsonRecord]> => {
  const at = { output_index: index, item_id: item.id }
  return [
    ["response.output_item.added", { output_index: index, item: { ...item, status: "in_progress" } }],
    ["response.web_search_call.in_progress", at],
    ["response.web_search_call.searching", at],
    ["response.web_search_call.completed", at],
    ["response.output_item.done", { output_index: index, item }]
  ]
}

/** A call as a function_call item; a namespace member's flat name back as its `namespace` and `name`. */
export const functionCallItem = (
  call: ToolCallPart,
  id: string,
  status = "completed",
  names?: ToolNames
): JsonRecord => ({
  id,
  type: "function_call",
  status,
  call_id: packToolId(call.id, call.signature),
  ...(names?.namespaced(call.name) ?? { name: call.name }),
  arguments: JSON.stringify(call.input)
})

export const messageItem = (text: string, id: string, status = "completed"): JsonRecord => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }]
})

/** The IR's assistant content as output items, in order; consecutive text parts make one message. */
export const outputItems = (
  content: ReadonlyArray<AssistantPart>,
  responseId: string,
  names?: ToolNames
): ReadonlyArray<JsonRecord> => {
  const items: Array<JsonRecord> = []
  let text: string | undefined
  const flush = () => {
    if (text === undefined) return
    items.push(messageItem(text, itemId("msg", responseId, items.length)))
    text = undefined
  }
  for (const part of content) {
    if (part.type === "text") {
      text = (text ?? "") + part.text
      continue
    }
    flush()
    if (part.type === "tool_call")
      items.push(functionCallItem(part, itemId("fc", responseId, items.length), "completed", names))
    else items.push(reasoningItem(part, itemId("rs", responseId, items.length)))
  }
  flush()
  return items
}

// ---------------------------------------------------------------------------------------------------------------
// request: IR → Responses (towards an openai-responses upstream)

const userContent = (parts: ReadonlyArray<UserPart>): ReadonlyArray<JsonRecord> =>
  parts.map((p) =>
    p.type === "text"
      ? { type: "input_text", text: p.text }
      : { type: "input_image", image_url: imageSourceToUrl(p.source), detail: "auto" }
  )

const toolOutput = (result: ToolResultPart): string | ReadonlyArray<JsonRecord> => {
  const text = result.content.every((p) => p.type === "text")
  const prefix = result.isError ? "Error: " : ""
  if (text) return prefix + result.content.map((p) => (p.type === "text" ? p.text : "")).join("")
  return userContent(result.isError ? [{ type: "text", text: prefix }, ...result.content] : result.content)
}

const assistantItems = (content: ReadonlyArray<AssistantPart>, turn: number): ReadonlyArray<JsonRecord> =>
  content.flatMap((part, index): ReadonlyArray<JsonRecord> => {
    switch (part.type) {
      case "text":
        return part.text === "" ? [] : [{ role: "assistant", content: [{ type: "output_text", text: part.text }] }]
      case "tool_call":
        return [{ type: "function_call", call_id: part.id, name: part.name, arguments: JSON.stringify(part.input) }]
      case "thinking":
        // Only OpenAI's own reasoning goes back to OpenAI; another vendor's cannot be verified there.
        return part.signatureOrigin === "openai" && part.signature !== undefined
          ? [reasoningItem(part, `rs_${fnv1a(part.signature)}${fnv1a(`${turn}:${index}`)}`)]
          : []
      default:
        return [] // redacted thinking is Anthropic's alone
    }
  })

export const irToResponsesRequest = (request: ChatRequest): Converted<JsonRecord> => {
  const input: Array<JsonRecord> = []
  request.messages.forEach((message, turn) => {
    if (message.role === "user") input.push({ role: "user", content: userContent(message.content) })
    else if (message.role === "assistant") input.push(...assistantItems(message.content, turn))
    else
      for (const result of message.content) {
        input.push({ type: "function_call_output", call_id: result.toolCallId, output: toolOutput(result) })
      }
  })
  const format = request.responseFormat
  const instructions = [
    ...request.system.map((p) => p.text),
    ...(format?.type === "json_object" ? [JSON_OBJECT_INSTRUCTION] : [])
  ].join("\n\n")
  const hasTools = request.tools.length > 0
  const choice = request.toolChoice
  const effort =
    request.reasoning?.effort ??
    (request.reasoning?.thinking?.type === "enabled" || request.reasoning?.thinking?.type === "adaptive"
      ? "medium"
      : undefined)
  return Result.succeed(
    compact({
      input,
      instructions: instructions === "" ? undefined : instructions,
      tools: hasTools
        ? request.tools.map((t) =>
            compact({
              type: "function",
              name: t.name,
              description: t.description,
              parameters: t.parameters,
              strict: t.strict ?? false
            })
          )
        : undefined,
      tool_choice:
        !hasTools || choice === undefined
          ? undefined
          : choice.type === "any"
            ? "required"
            : choice.type === "tool"
              ? { type: "function", name: choice.name }
              : choice.type,
      parallel_tool_calls: hasTools ? request.parallelToolCalls : undefined,
      text:
        format === undefined
          ? undefined
          : format.type === "json_schema"
            ? {
                format: compact({
                  type: "json_schema",
                  name: format.name ?? "response",
                  description: format.description,
                  schema: format.schema,
                  strict: format.strict
                })
              }
            : { format: { type: format.type } },
      reasoning: effort === undefined ? undefined : { effort, summary: "auto" },
      max_output_tokens: request.maxTokens,
      temperature: request.temperature,
      top_p: request.topP,
      safety_identifier: request.user,
      prompt_cache_key: request.promptCacheKey,
      stream: request.stream,
      store: false,
      include: ["reasoning.encrypted_content"]
    })
  )
}
