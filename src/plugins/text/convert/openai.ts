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
  ChatResponse,
  Converted,
  ImagePart,
  Message,
  ResponseFormat,
  StopReason,
  TextPart,
  ToolCallPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  Usage,
  UserPart
} from "./ChatIR.ts"
import { checkToolPairing, convertError, optionalFlag } from "./ChatIR.ts"
import { imageSourceFromUrl, imageSourceToUrl } from "./dataUrl.ts"
import { packToolId, unpackToolId } from "./thinkingSignature.ts"
import {
  asArray,
  asCount,
  asNumber,
  asRecord,
  asString,
  compact,
  label,
  isRecord,
  JSON_OBJECT_INSTRUCTION,
  type JsonRecord,
  parseJsonObject
} from "./json.ts"

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
// request: OpenAI → IR

const textOf = (content: unknown, param: string): Converted<ReadonlyArray<TextPart>> => {
  if (typeof content === "string") return Result.succeed([{ type: "text", text: content }])
  if (content === null || content === undefined) return Result.succeed([])
  if (!Array.isArray(content)) return convertError(param, "content must be a string or an array of parts")
  const parts: Array<TextPart> = []
  for (let j = 0; j < content.length; j++) {
    const part = asRecord(content[j])
    if (part.type === "text" && typeof part.text === "string") parts.push({ type: "text", text: part.text })
    else if (part.type === "refusal" && typeof part.refusal === "string")
      parts.push({ type: "text", text: part.refusal })
    else return convertError(`${param}.${j}`, `content part type '${label(part.type)}' is not allowed here`)
  }
  return Result.succeed(parts)
}

const userPartsOf = (content: unknown, param: string): Converted<ReadonlyArray<UserPart>> => {
  if (typeof content === "string") return Result.succeed([{ type: "text", text: content }])
  if (!Array.isArray(content)) return convertError(param, "content must be a string or an array of parts")
  const parts: Array<UserPart> = []
  for (let j = 0; j < content.length; j++) {
    const part = asRecord(content[j])
    const at = `${param}.${j}`
    switch (part.type) {
      case "text":
        if (typeof part.text !== "string") return convertError(`${at}.text`, "text must be a string")
        parts.push({ type: "text", text: part.text })
        break
      case "image_url": {
        const url = asString(asRecord(part.image_url).url)
        if (url === undefined) return convertError(`${at}.image_url.url`, "image_url.url must be a string")
        parts.push({ type: "image", source: imageSourceFromUrl(url) })
        break
      }
      case "input_audio":
        return convertError(at, "input_audio is not supported by the selected upstream")
      case "file":
        return convertError(at, "file parts are not supported by the selected upstream")
      default:
        return convertError(`${at}.type`, `unsupported content part type '${label(part.type)}'`)
    }
  }
  return Result.succeed(parts)
}

const toolCallsOf = (raw: unknown, param: string): Converted<ReadonlyArray<ToolCallPart>> => {
  const calls: Array<ToolCallPart> = []
  const list = asArray(raw)
  for (let j = 0; j < list.length; j++) {
    const call = asRecord(list[j])
    const at = `${param}.${j}`
    if (call.type !== undefined && call.type !== "function") {
      return convertError(
        `${at}.type`,
        `tool call type '${label(call.type)}' is not supported by the selected upstream`
      )
    }
    const fn = asRecord(call.function)
    const id = asString(call.id)
    const name = asString(fn.name)
    if (id === undefined) return convertError(`${at}.id`, "tool call id must be a string")
    if (name === undefined) return convertError(`${at}.function.name`, "function name must be a string")
    const input = parseJsonObject(asString(fn.arguments) ?? "")
    if (input === undefined) return convertError(`${at}.function.arguments`, "arguments must be a JSON object")
    const unpacked = unpackToolId(id)
    calls.push(compact({ type: "tool_call" as const, id: unpacked.id, name, input, signature: unpacked.signature }))
  }
  return Result.succeed(calls)
}

/** Vendors name it `reasoning` (OpenRouter, new vLLM) or `reasoning_content` (DeepSeek, Qwen, …). */
const reasoningOf = (message: JsonRecord): ReadonlyArray<AssistantPart> => {
  const reasoning = asString(message.reasoning) ?? asString(message.reasoning_content)
  return reasoning === undefined || reasoning === "" ? [] : [{ type: "thinking", text: reasoning }]
}

/** A refusal only stands in for the text when there is no text. */
const refusalOf = (message: JsonRecord, content: ReadonlyArray<AssistantPart>): ReadonlyArray<AssistantPart> => {
  const refusal = asString(message.refusal)
  return refusal === undefined || refusal === "" || content.some((p) => p.type === "text")
    ? []
    : [{ type: "text", text: refusal }]
}

const reasoningFieldOf = (content: ReadonlyArray<AssistantPart>, field: ReasoningField): JsonRecord => {
  const thinking = content.flatMap((p) => (p.type === "thinking" ? [p.text] : []))
  return field === "none" || thinking.length === 0 ? {} : { [field]: thinking.join("\n") }
}

const assistantOf = (message: JsonRecord, param: string): Converted<Message> => {
  const content: Array<AssistantPart> = [...reasoningOf(message)]
  if (typeof message.content === "string") {
    if (message.content !== "") content.push({ type: "text", text: message.content })
  } else {
    const texts = textOf(message.content, `${param}.content`)
    if (Result.isFailure(texts)) return Result.fail(texts.failure)
    content.push(...texts.success)
  }
  content.push(...refusalOf(message, content))
  const calls = toolCallsOf(message.tool_calls, `${param}.tool_calls`)
  if (Result.isFailure(calls)) return Result.fail(calls.failure)
  content.push(...calls.success)
  return Result.succeed({ role: "assistant", content })
}

const toolResultOf = (message: JsonRecord, param: string): Converted<ToolResultPart> => {
  const toolCallId = asString(message.tool_call_id)
  if (toolCallId === undefined) return convertError(`${param}.tool_call_id`, "tool_call_id must be a string")
  const texts = textOf(message.content ?? "", `${param}.content`)
  if (Result.isFailure(texts)) return Result.fail(texts.failure)
  return Result.succeed({
    type: "tool_result",
    toolCallId: unpackToolId(toolCallId).id,
    content: texts.success,
    isError: false
  })
}

const toolsOf = (raw: unknown): Converted<ReadonlyArray<ToolDefinition>> => {
  const tools: Array<ToolDefinition> = []
  const list = asArray(raw)
  for (let i = 0; i < list.length; i++) {
    const tool = asRecord(list[i])
    if (tool.type === "custom")
      return convertError(`tools.${i}`, "custom tools are not supported by the selected upstream")
    if (tool.type !== "function") continue
    const fn = asRecord(tool.function)
    const name = asString(fn.name)
    if (name === undefined) return convertError(`tools.${i}.function.name`, "function name must be a string")
    const strict = optionalFlag(fn.strict, `tools.${i}.function.strict`)
    if (Result.isFailure(strict)) return Result.fail(strict.failure)
    tools.push(
      compact({
        name,
        description: asString(fn.description),
        parameters: isRecord(fn.parameters) ? fn.parameters : { type: "object", properties: {} },
        strict: strict.success
      })
    )
  }
  return Result.succeed(tools)
}

const toolChoiceOf = (
  raw: unknown,
  tools: ReadonlyArray<ToolDefinition>
): { toolChoice?: ToolChoice; tools: ReadonlyArray<ToolDefinition> } => {
  if (raw === "auto") return { toolChoice: { type: "auto" }, tools }
  if (raw === "required") return { toolChoice: { type: "any" }, tools }
  if (raw === "none") return { toolChoice: { type: "none" }, tools }
  const choice = asRecord(raw)
  if (choice.type === "function") {
    const name = asString(asRecord(choice.function).name)
    return name === undefined ? { tools } : { toolChoice: { type: "tool", name }, tools }
  }
  if (choice.type === "allowed_tools") {
    const allowed = asRecord(choice.allowed_tools)
    const names = new Set(
      asArray(allowed.tools).flatMap((t) => {
        const name = asString(asRecord(asRecord(t).function).name)
        return name === undefined ? [] : [name]
      })
    )
    return {
      toolChoice: { type: allowed.mode === "required" ? "any" : "auto" },
      tools: tools.filter((t) => names.has(t.name))
    }
  }
  return { tools }
}

const responseFormatOf = (raw: unknown): ResponseFormat | undefined => {
  const format = asRecord(raw)
  switch (format.type) {
    case "text":
      return { type: "text" }
    case "json_object":
      return { type: "json_object" }
    case "json_schema": {
      const spec = asRecord(format.json_schema)
      return compact({
        type: "json_schema" as const,
        name: asString(spec.name),
        description: asString(spec.description),
        schema: isRecord(spec.schema) ? spec.schema : {},
        strict: typeof spec.strict === "boolean" ? spec.strict : undefined
      })
    }
    default:
      return undefined
  }
}

const stopOf = (raw: unknown): ReadonlyArray<string> | undefined => {
  if (typeof raw === "string") return [raw]
  const list = asArray(raw).filter((s): s is string => typeof s === "string")
  return list.length > 0 ? list : undefined
}

export const openAIRequestToIR = (body: unknown): Converted<ChatRequest> => {
  if (!isRecord(body)) return convertError("", "request body must be a JSON object")
  const model = asString(body.model)
  if (model === undefined) return convertError("model", "model must be a string")
  const n = asNumber(body.n)
  if (n !== undefined && n > 1) return convertError("n", "n > 1 is not supported by the selected upstream")
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return convertError("messages", "messages must be a non-empty array")
  }
  const rawMessages: ReadonlyArray<unknown> = body.messages
  const system: Array<TextPart> = []
  const messages: Array<Message> = []
  for (let i = 0; i < rawMessages.length; i++) {
    const message = asRecord(rawMessages[i])
    const param = `messages.${i}`
    switch (message.role) {
      case "system":
      case "developer": {
        const texts = textOf(message.content, `${param}.content`)
        if (Result.isFailure(texts)) return Result.fail(texts.failure)
        system.push(...texts.success)
        break
      }
      case "user": {
        const parts = userPartsOf(message.content, `${param}.content`)
        if (Result.isFailure(parts)) return Result.fail(parts.failure)
        messages.push({ role: "user", content: parts.success })
        break
      }
      case "assistant": {
        const assistant = assistantOf(message, param)
        if (Result.isFailure(assistant)) return Result.fail(assistant.failure)
        messages.push(assistant.success)
        break
      }
      case "tool": {
        const result = toolResultOf(message, param)
        if (Result.isFailure(result)) return Result.fail(result.failure)
        const last = messages[messages.length - 1]
        if (last?.role === "tool")
          messages[messages.length - 1] = { role: "tool", content: [...last.content, result.success] }
        else messages.push({ role: "tool", content: [result.success] })
        break
      }
      default:
        return convertError(`${param}.role`, `unsupported role '${label(message.role)}'`)
    }
  }
  // Map IR message index back to a client path for the pairing error: count only the non-system messages.
  const clientIndex = (irIndex: number): string => {
    let seen = -1
    for (let i = 0; i < rawMessages.length; i++) {
      const role = asRecord(rawMessages[i]).role
      if (role === "system" || role === "developer") continue
      if (role === "tool" && i > 0 && asRecord(rawMessages[i - 1]).role === "tool") continue
      seen++
      if (seen === irIndex) return `messages.${i}`
    }
    return "messages"
  }
  const pairing = checkToolPairing(messages, clientIndex)
  if (Result.isFailure(pairing)) return Result.fail(pairing.failure)
  const tools = toolsOf(body.tools)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const format = asRecord(body.response_format)
  const strictFormat =
    format.type === "json_schema"
      ? optionalFlag(asRecord(format.json_schema).strict, "response_format.json_schema.strict")
      : Result.succeed(undefined)
  if (Result.isFailure(strictFormat)) return Result.fail(strictFormat.failure)
  const choice = toolChoiceOf(body.tool_choice, tools.success)
  const effort = asString(body.reasoning_effort)
  const streamOptions = asRecord(body.stream_options)
  return Result.succeed(
    compact({
      model,
      system,
      messages,
      tools: choice.tools,
      toolChoice: choice.toolChoice,
      parallelToolCalls: typeof body.parallel_tool_calls === "boolean" ? body.parallel_tool_calls : undefined,
      maxTokens: asNumber(body.max_completion_tokens) ?? asNumber(body.max_tokens),
      stop: stopOf(body.stop),
      temperature: asNumber(body.temperature),
      topP: asNumber(body.top_p),
      responseFormat: responseFormatOf(body.response_format),
      reasoning: effort === undefined ? undefined : { effort },
      stream: body.stream === true,
      includeUsage: typeof streamOptions.include_usage === "boolean" ? streamOptions.include_usage : undefined,
      user: asString(body.safety_identifier) ?? asString(body.user)
    })
  )
}

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
const toolCallToOpenAI = (call: ToolCallPart, toClient = false): JsonRecord => ({
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
      user: request.user
    })
  )
}

// ---------------------------------------------------------------------------------------------------------------
// response: OpenAI → IR and IR → OpenAI

export const openAIResponseToIR = (body: unknown): Converted<ChatResponse> => {
  if (!isRecord(body)) return convertError("", "response body must be a JSON object")
  const choice = asArray(body.choices)[0]
  if (!isRecord(choice)) return convertError("choices", "response has no choices")
  const message = asRecord(choice.message)
  const content: Array<AssistantPart> = [...reasoningOf(message)]
  const texts = textOf(message.content, "choices.0.message.content")
  if (Result.isSuccess(texts)) content.push(...texts.success.filter((t) => t.text !== ""))
  content.push(...refusalOf(message, content))
  for (const raw of asArray(message.tool_calls)) {
    const call = asRecord(raw)
    const fn = asRecord(call.function)
    content.push({
      type: "tool_call",
      id: asString(call.id) ?? "",
      name: asString(fn.name) ?? "",
      input: parseJsonObject(asString(fn.arguments) ?? "") ?? {}
    })
  }
  const sawToolCalls = content.some((p) => p.type === "tool_call")
  return Result.succeed({
    id: asString(body.id) ?? "",
    model: asString(body.model) ?? "",
    content,
    stopReason: openAIFinishToStopReason(choice.finish_reason, sawToolCalls),
    usage: openAIUsageToIR(body.usage)
  })
}

/**
 * OpenAI clients (and the logs and dashboards built on them) take a completion id to start with `chatcmpl-`; another
 * vendor's id is kept behind the prefix so the upstream's record can still be found from it.
 */
export const chatCompletionId = (id: string): string => (id.startsWith("chatcmpl-") ? id : `chatcmpl-${id}`)

export const irToOpenAIResponse = (response: ChatResponse, options: OpenAIResponseOptions): JsonRecord => {
  const text = response.content.flatMap((p) => (p.type === "text" ? [p.text] : []))
  const calls = response.content.filter((p): p is ToolCallPart => p.type === "tool_call")
  return {
    id: options.id ?? chatCompletionId(response.id),
    object: "chat.completion",
    created: options.created,
    model: response.model,
    choices: [
      {
        index: 0,
        message: compact({
          role: "assistant",
          content: text.length > 0 ? text.join("") : null,
          refusal: null,
          tool_calls: calls.length > 0 ? calls.map((call) => toolCallToOpenAI(call, true)) : undefined,
          ...reasoningFieldOf(response.content, options.reasoningField ?? "reasoning_content")
        }),
        logprobs: null,
        finish_reason: stopReasonToOpenAIFinish(response.stopReason, calls.length > 0)
      }
    ],
    usage: irUsageToOpenAI(response.usage)
  }
}
