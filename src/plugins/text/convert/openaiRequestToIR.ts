/** An OpenAI chat-completion request in the chat IR: messages, tools, response format, reasoning, every field checked. */
import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  Message,
  ResponseFormat,
  TextPart,
  ToolCallPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  UserPart
} from "./ChatIR.ts"
import { checkToolPairing, convertError, optionalFlag, toolDefinition } from "./ChatIR.ts"
import { contentParts, textPart } from "./contentParts.ts"
import { imageSourceFromUrl } from "./dataUrl.ts"
import { unpackToolId } from "./thinkingSignature.ts"
import {
  asArray,
  asNumber,
  asRecord,
  asString,
  compact,
  label,
  isRecord,
  type JsonRecord,
  parseJsonObject
} from "./json.ts"
import type { ReasoningField } from "./openai.ts"

// ---------------------------------------------------------------------------------------------------------------
// request: OpenAI → IR

export const textOf = (content: unknown, param: string): Converted<ReadonlyArray<TextPart>> => {
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

const userPartsOf = (content: unknown, param: string): Converted<ReadonlyArray<UserPart>> =>
  contentParts(content, param, (part, at): Converted<UserPart> => {
    switch (part.type) {
      case "text":
        return textPart(part, at)
      case "image_url": {
        const url = asString(asRecord(part.image_url).url)
        if (url === undefined) return convertError(`${at}.image_url.url`, "image_url.url must be a string")
        return Result.succeed({ type: "image", source: imageSourceFromUrl(url) })
      }
      case "input_audio":
        return convertError(at, "input_audio is not supported by the selected upstream")
      case "file":
        return convertError(at, "file parts are not supported by the selected upstream")
      default:
        return convertError(`${at}.type`, `unsupported content part type '${label(part.type)}'`)
    }
  })

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
export const reasoningOf = (message: JsonRecord): ReadonlyArray<AssistantPart> => {
  const reasoning = asString(message.reasoning) ?? asString(message.reasoning_content)
  return reasoning === undefined || reasoning === "" ? [] : [{ type: "thinking", text: reasoning }]
}

/** A refusal only stands in for the text when there is no text. */
export const refusalOf = (message: JsonRecord, content: ReadonlyArray<AssistantPart>): ReadonlyArray<AssistantPart> => {
  const refusal = asString(message.refusal)
  return refusal === undefined || refusal === "" || content.some((p) => p.type === "text")
    ? []
    : [{ type: "text", text: refusal }]
}

export const reasoningFieldOf = (content: ReadonlyArray<AssistantPart>, field: ReasoningField): JsonRecord => {
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
    const definition = toolDefinition(asRecord(tool.function), `tools.${i}.function`)
    if (Result.isFailure(definition)) return Result.fail(definition.failure)
    tools.push(definition.success)
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

/** The system text and the conversation: `system`/`developer` messages gathered, consecutive tool results merged. */
const messagesOf = (
  rawMessages: ReadonlyArray<unknown>
): Converted<{ readonly system: ReadonlyArray<TextPart>; readonly messages: ReadonlyArray<Message> }> => {
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
  return Result.succeed({ system, messages })
}

/** An IR message's index as the client's path (system messages and merged tool results skipped), for pairing errors. */
const clientIndexOf =
  (rawMessages: ReadonlyArray<unknown>) =>
  (irIndex: number): string => {
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
  const decoded = messagesOf(rawMessages)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const { system, messages } = decoded.success
  const clientIndex = clientIndexOf(rawMessages)
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
      user: asString(body.safety_identifier) ?? asString(body.user),
      promptCacheKey: asString(body.prompt_cache_key),
      // OpenAI's own search (its search models on chat completions): the vendor runs it.
      hostedTools: isRecord(body.web_search_options) ? [{ param: "web_search_options", type: "web_search" }] : undefined
    })
  )
}
