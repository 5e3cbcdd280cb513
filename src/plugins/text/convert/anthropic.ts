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
  ChatResponse,
  Converted,
  ImagePart,
  ImageSource,
  Message,
  ReasoningConfig,
  ResponseFormat,
  StopReason,
  TextPart,
  ThinkingMode,
  ThinkingPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  Usage,
  UserPart
} from "./ChatIR.ts"
import { checkToolPairing, convertError, optionalFlag } from "./ChatIR.ts"
import {
  asArray,
  asCount,
  asNumber,
  asRecord,
  asString,
  compact,
  isRecord,
  JSON_OBJECT_INSTRUCTION,
  type JsonRecord,
  label
} from "./json.ts"
import { clientSignature, packToolId, readSignature, syntheticSignature, unpackToolId } from "./thinkingSignature.ts"
import { restoreToolId, sanitizeToolId } from "./toolId.ts"

export interface AnthropicRequestOptions {
  /** Anthropic requires `max_tokens`; used when the client gave none. */
  readonly defaultMaxTokens: number
  /** Newer Claude models reject non-default sampling parameters; `omit` strips temperature/top_p/top_k. */
  readonly samplingParams?: "keep" | "omit"
}

/** Thinking budget chosen for an OpenAI-style effort (a gateway policy, see protocols §3.1). */
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

export const anthropicUsageToIR = (raw: unknown): Usage => {
  const usage = asRecord(raw)
  return {
    inputTokens: asCount(usage.input_tokens),
    outputTokens: asCount(usage.output_tokens),
    cacheReadTokens: asCount(usage.cache_read_input_tokens),
    cacheWriteTokens: asCount(usage.cache_creation_input_tokens),
    reasoningTokens: asCount(asRecord(usage.output_tokens_details).thinking_tokens)
  }
}

export const irUsageToAnthropic = (usage: Usage): JsonRecord =>
  compact({
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: usage.cacheWriteTokens,
    cache_read_input_tokens: usage.cacheReadTokens,
    output_tokens: usage.outputTokens,
    output_tokens_details: usage.reasoningTokens > 0 ? { thinking_tokens: usage.reasoningTokens } : undefined
  })

// ---------------------------------------------------------------------------------------------------------------
// request: Anthropic → IR

const imageOf = (block: JsonRecord, param: string): Converted<ImagePart> => {
  const source = asRecord(block.source)
  if (source.type === "base64") {
    const mediaType = asString(source.media_type)
    const data = asString(source.data)
    if (mediaType === undefined || data === undefined) {
      return convertError(`${param}.source`, "base64 image source needs media_type and data")
    }
    return Result.succeed({ type: "image", source: { kind: "base64", mediaType, data } })
  }
  if (source.type === "url") {
    const url = asString(source.url)
    if (url === undefined) return convertError(`${param}.source.url`, "url must be a string")
    return Result.succeed({ type: "image", source: { kind: "url", url } })
  }
  return convertError(
    `${param}.source.type`,
    `image source '${label(source.type)}' is not supported by the selected upstream`
  )
}

const toolResultOf = (block: JsonRecord, param: string): Converted<ToolResultPart> => {
  const toolUseId = asString(block.tool_use_id)
  if (toolUseId === undefined) return convertError(`${param}.tool_use_id`, "tool_use_id must be a string")
  const isError = optionalFlag(block.is_error, `${param}.is_error`)
  if (Result.isFailure(isError)) return Result.fail(isError.failure)
  const content: Array<TextPart | ImagePart> = []
  if (typeof block.content === "string") content.push({ type: "text", text: block.content })
  else {
    const list = asArray(block.content)
    for (let k = 0; k < list.length; k++) {
      const inner = asRecord(list[k])
      if (inner.type === "text" && typeof inner.text === "string") content.push({ type: "text", text: inner.text })
      else if (inner.type === "image") {
        const image = imageOf(inner, `${param}.content.${k}`)
        if (Result.isFailure(image)) return Result.fail(image.failure)
        content.push(image.success)
      } else {
        return convertError(`${param}.content.${k}`, `tool result block '${label(inner.type)}' is not supported`)
      }
    }
  }
  return Result.succeed({
    type: "tool_result",
    toolCallId: unpackToolId(restoreToolId(toolUseId)).id,
    content,
    isError: isError.success === true
  })
}

/** The signature decides whether the block may ever be replayed to Anthropic (see thinkingSignature.ts). */
const thinkingBlockToIR = (block: JsonRecord): ThinkingPart => {
  const text = asString(block.thinking) ?? ""
  const raw = asString(block.signature) ?? ""
  if (raw === "") return { type: "thinking", text }
  const { signature, origin } = readSignature(raw)
  return { type: "thinking", text, signature, signatureOrigin: origin }
}

/** One Anthropic user turn → an IR tool message (its tool results) followed by an IR user message (the rest). */
const userTurnOf = (content: unknown, param: string): Converted<ReadonlyArray<Message>> => {
  if (typeof content === "string") return Result.succeed([{ role: "user", content: [{ type: "text", text: content }] }])
  if (!Array.isArray(content)) return convertError(param, "content must be a string or an array of blocks")
  const results: Array<ToolResultPart> = []
  const parts: Array<UserPart> = []
  for (let j = 0; j < content.length; j++) {
    const block = asRecord(content[j])
    const at = `${param}.${j}`
    switch (block.type) {
      case "text":
        if (typeof block.text !== "string") return convertError(`${at}.text`, "text must be a string")
        parts.push({ type: "text", text: block.text })
        break
      case "image": {
        const image = imageOf(block, at)
        if (Result.isFailure(image)) return Result.fail(image.failure)
        parts.push(image.success)
        break
      }
      case "tool_result": {
        const result = toolResultOf(block, at)
        if (Result.isFailure(result)) return Result.fail(result.failure)
        results.push(result.success)
        break
      }
      default:
        return convertError(`${at}.type`, `block type '${label(block.type)}' is not supported by the selected upstream`)
    }
  }
  const out: Array<Message> = []
  if (results.length > 0) out.push({ role: "tool", content: results })
  if (parts.length > 0 || results.length === 0) out.push({ role: "user", content: parts })
  return Result.succeed(out)
}

const assistantTurnOf = (content: unknown, param: string): Converted<Message> => {
  if (typeof content === "string") {
    return Result.succeed({ role: "assistant", content: content === "" ? [] : [{ type: "text", text: content }] })
  }
  if (!Array.isArray(content)) return convertError(param, "content must be a string or an array of blocks")
  const parts: Array<AssistantPart> = []
  for (let j = 0; j < content.length; j++) {
    const block = asRecord(content[j])
    const at = `${param}.${j}`
    switch (block.type) {
      case "text":
        if (typeof block.text !== "string") return convertError(`${at}.text`, "text must be a string")
        parts.push({ type: "text", text: block.text })
        break
      case "thinking":
        parts.push(thinkingBlockToIR(block))
        break
      case "redacted_thinking":
        parts.push({ type: "redacted_thinking", data: asString(block.data) ?? "" })
        break
      case "tool_use": {
        const id = asString(block.id)
        const name = asString(block.name)
        if (id === undefined || name === undefined) return convertError(at, "tool_use needs a string id and name")
        const input = block.input === undefined ? {} : block.input
        if (!isRecord(input)) return convertError(`${at}.input`, "tool_use input must be an object")
        const unpacked = unpackToolId(restoreToolId(id))
        parts.push(compact({ type: "tool_call" as const, id: unpacked.id, name, input, signature: unpacked.signature }))
        break
      }
      default:
        return convertError(`${at}.type`, `block type '${label(block.type)}' is not supported by the selected upstream`)
    }
  }
  return Result.succeed({ role: "assistant", content: parts })
}

const systemOf = (raw: unknown, param: string): Converted<ReadonlyArray<TextPart>> => {
  if (raw === undefined || raw === null) return Result.succeed([])
  if (typeof raw === "string") return Result.succeed(raw === "" ? [] : [{ type: "text", text: raw }])
  if (!Array.isArray(raw)) return convertError(param, "system must be a string or an array of text blocks")
  const parts: Array<TextPart> = []
  for (let j = 0; j < raw.length; j++) {
    const block = asRecord(raw[j])
    if (block.type !== "text" || typeof block.text !== "string") {
      return convertError(`${param}.${j}`, "system blocks must be text blocks")
    }
    parts.push({ type: "text", text: block.text })
  }
  return Result.succeed(parts)
}

const toolsOf = (raw: unknown): Converted<ReadonlyArray<ToolDefinition>> => {
  const tools: Array<ToolDefinition> = []
  const list = asArray(raw)
  for (let i = 0; i < list.length; i++) {
    const tool = asRecord(list[i])
    // Server tools (web_search_…, bash_…) carry a versioned `type`; only the vendor can run them.
    if (tool.type !== undefined && tool.type !== "custom") continue
    const name = asString(tool.name)
    if (name === undefined) return convertError(`tools.${i}.name`, "tool name must be a string")
    const strict = optionalFlag(tool.strict, `tools.${i}.strict`)
    if (Result.isFailure(strict)) return Result.fail(strict.failure)
    tools.push(
      compact({
        name,
        description: asString(tool.description),
        parameters: isRecord(tool.input_schema) ? tool.input_schema : { type: "object", properties: {} },
        strict: strict.success
      })
    )
  }
  return Result.succeed(tools)
}

const toolChoiceOf = (raw: unknown): { toolChoice?: ToolChoice; parallelToolCalls?: boolean } => {
  const choice = asRecord(raw)
  const parallelToolCalls =
    typeof choice.disable_parallel_tool_use === "boolean" ? !choice.disable_parallel_tool_use : undefined
  switch (choice.type) {
    case "auto":
    case "any":
    case "none":
      return compact({ toolChoice: { type: choice.type }, parallelToolCalls })
    case "tool": {
      const name = asString(choice.name)
      return name === undefined ? {} : compact({ toolChoice: { type: "tool" as const, name }, parallelToolCalls })
    }
    default:
      return {}
  }
}

const thinkingModeOf = (raw: unknown): ThinkingMode | undefined => {
  const thinking = asRecord(raw)
  switch (thinking.type) {
    case "enabled":
      return { type: "enabled", budgetTokens: asCount(thinking.budget_tokens) }
    case "adaptive":
      return { type: "adaptive" }
    case "disabled":
      return { type: "disabled" }
    default:
      return undefined
  }
}

export const anthropicRequestToIR = (body: unknown): Converted<ChatRequest> => {
  if (!isRecord(body)) return convertError("", "request body must be a JSON object")
  const model = asString(body.model)
  if (model === undefined) return convertError("model", "model must be a string")
  if (!Array.isArray(body.messages)) return convertError("messages", "messages must be an array")
  const systemParts = systemOf(body.system, "system")
  if (Result.isFailure(systemParts)) return Result.fail(systemParts.failure)
  const system: Array<TextPart> = [...systemParts.success]
  const messages: Array<Message> = []
  const paths: Array<string> = []
  for (let i = 0; i < body.messages.length; i++) {
    const message = asRecord(body.messages[i])
    const param = `messages.${i}`
    switch (message.role) {
      case "user": {
        const turn = userTurnOf(message.content, `${param}.content`)
        if (Result.isFailure(turn)) return Result.fail(turn.failure)
        for (const m of turn.success) {
          messages.push(m)
          paths.push(param)
        }
        break
      }
      case "assistant": {
        const turn = assistantTurnOf(message.content, `${param}.content`)
        if (Result.isFailure(turn)) return Result.fail(turn.failure)
        messages.push(turn.success)
        paths.push(param)
        break
      }
      case "system": {
        const parts = systemOf(message.content, `${param}.content`)
        if (Result.isFailure(parts)) return Result.fail(parts.failure)
        system.push(...parts.success)
        break
      }
      default:
        return convertError(`${param}.role`, `unsupported role '${label(message.role)}'`)
    }
  }
  const pairing = checkToolPairing(messages, (i) => paths[i] ?? "messages")
  if (Result.isFailure(pairing)) return Result.fail(pairing.failure)
  const tools = toolsOf(body.tools)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const disableParallel = optionalFlag(
    asRecord(body.tool_choice).disable_parallel_tool_use,
    "tool_choice.disable_parallel_tool_use"
  )
  if (Result.isFailure(disableParallel)) return Result.fail(disableParallel.failure)
  const choice = toolChoiceOf(body.tool_choice)
  const outputConfig = asRecord(body.output_config)
  // `output_format` is the structured-outputs beta's spelling (older SDKs send it), `output_config.format` the GA one.
  const format = asRecord(outputConfig.format ?? body.output_format)
  const responseFormat: ResponseFormat | undefined =
    format.type === "json_schema"
      ? { type: "json_schema", schema: isRecord(format.schema) ? format.schema : {} }
      : undefined
  const effort = asString(outputConfig.effort)
  const thinking = thinkingModeOf(body.thinking)
  const reasoning: ReasoningConfig | undefined =
    effort === undefined && thinking === undefined ? undefined : compact({ effort, thinking })
  const stop = asArray(body.stop_sequences).filter((s): s is string => typeof s === "string")
  return Result.succeed(
    compact({
      model,
      system,
      messages,
      tools: tools.success,
      toolChoice: choice.toolChoice,
      parallelToolCalls: choice.parallelToolCalls,
      maxTokens: asNumber(body.max_tokens),
      stop: stop.length > 0 ? stop : undefined,
      temperature: asNumber(body.temperature),
      topP: asNumber(body.top_p),
      topK: asNumber(body.top_k),
      responseFormat,
      reasoning,
      stream: body.stream === true,
      user: asString(asRecord(body.metadata).user_id)
    })
  )
}

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
      tools:
        request.tools.length > 0
          ? request.tools.map((t) =>
              compact({
                name: t.name,
                description: t.description,
                input_schema: { type: "object", ...t.parameters },
                strict: t.strict
              })
            )
          : undefined,
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

// ---------------------------------------------------------------------------------------------------------------
// response: Anthropic → IR and IR → Anthropic

export const anthropicResponseToIR = (body: unknown): Converted<ChatResponse> => {
  if (!isRecord(body)) return convertError("", "response body must be a JSON object")
  const content: Array<AssistantPart> = []
  for (const raw of asArray(body.content)) {
    const block = asRecord(raw)
    switch (block.type) {
      case "text":
        content.push({ type: "text", text: asString(block.text) ?? "" })
        break
      case "thinking":
        content.push(thinkingBlockToIR(block))
        break
      case "redacted_thinking":
        content.push({ type: "redacted_thinking", data: asString(block.data) ?? "" })
        break
      case "tool_use":
        content.push({
          type: "tool_call",
          id: restoreToolId(asString(block.id) ?? ""),
          name: asString(block.name) ?? "",
          input: asRecord(block.input)
        })
        break
    }
  }
  const stopSequence = asString(body.stop_sequence)
  return Result.succeed(
    compact({
      id: asString(body.id) ?? "",
      model: asString(body.model) ?? "",
      content,
      stopReason: asString(body.stop_reason) ?? "end_turn",
      stopSequence,
      usage: anthropicUsageToIR(body.usage)
    })
  )
}

const responseBlockOf = (part: AssistantPart): JsonRecord => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "thinking":
      return {
        type: "thinking",
        thinking: part.text,
        signature:
          part.signature === undefined
            ? syntheticSignature(part.text)
            : clientSignature(part.signature, part.signatureOrigin)
      }
    case "redacted_thinking":
      return { type: "redacted_thinking", data: part.data }
    case "tool_call":
      return {
        type: "tool_use",
        id: sanitizeToolId(packToolId(part.id, part.signature)),
        name: part.name,
        input: part.input
      }
  }
}

export const irToAnthropicResponse = (response: ChatResponse): JsonRecord => ({
  id: response.id,
  type: "message",
  role: "assistant",
  model: response.model,
  content: response.content.map(responseBlockOf),
  stop_reason: stopReasonToAnthropic(response.stopReason),
  stop_sequence: response.stopSequence ?? null,
  usage: irUsageToAnthropic(response.usage)
})
