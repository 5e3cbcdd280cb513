/** An Anthropic messages request in the chat IR: system, messages, tools, thinking, every field checked. */
import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  ImagePart,
  Message,
  ReasoningConfig,
  ResponseFormat,
  TextPart,
  ThinkingMode,
  ThinkingPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  UserPart
} from "./ChatIR.ts"
import { checkToolPairing, convertError, optionalFlag, toolDefinition } from "./ChatIR.ts"
import { asArray, asCount, asNumber, asRecord, asString, compact, isRecord, type JsonRecord, label } from "./json.ts"
import { readSignature, unpackToolId } from "./thinkingSignature.ts"
import { restoreToolId } from "./toolId.ts"

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
export const thinkingBlockToIR = (block: JsonRecord): ThinkingPart => {
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
    const definition = toolDefinition({ ...tool, parameters: tool.input_schema }, `tools.${i}`)
    if (Result.isFailure(definition)) return Result.fail(definition.failure)
    tools.push(definition.success)
  }
  return Result.succeed(tools)
}

/** Anthropic's server tools (`web_search_20250305`, …): Anthropic runs them. */
const serverTools = (raw: unknown): ReadonlyArray<{ param: string; type: string }> | undefined => {
  const hosted = asArray(raw).flatMap((tool, i) => {
    const type = asRecord(tool).type
    return typeof type === "string" && type !== "custom" ? [{ param: `tools.${i}`, type }] : []
  })
  return hosted.length > 0 ? hosted : undefined
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

/**
 * The conversation, each IR message with the client path it came from (a user turn of tool results and text becomes
 * two), and the system text: the top-level `system` then any `system` role messages.
 */
const messagesOf = (
  raw: ReadonlyArray<unknown>,
  topSystem: ReadonlyArray<TextPart>
): Converted<{
  readonly system: ReadonlyArray<TextPart>
  readonly messages: ReadonlyArray<Message>
  readonly paths: ReadonlyArray<string>
}> => {
  const system: Array<TextPart> = [...topSystem]
  const messages: Array<Message> = []
  const paths: Array<string> = []
  for (let i = 0; i < raw.length; i++) {
    const message = asRecord(raw[i])
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
  return Result.succeed({ system, messages, paths })
}

export const anthropicRequestToIR = (body: unknown): Converted<ChatRequest> => {
  if (!isRecord(body)) return convertError("", "request body must be a JSON object")
  const model = asString(body.model)
  if (model === undefined) return convertError("model", "model must be a string")
  if (!Array.isArray(body.messages)) return convertError("messages", "messages must be an array")
  const systemParts = systemOf(body.system, "system")
  if (Result.isFailure(systemParts)) return Result.fail(systemParts.failure)
  const decoded = messagesOf(body.messages, systemParts.success)
  if (Result.isFailure(decoded)) return Result.fail(decoded.failure)
  const { system, messages, paths } = decoded.success
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
      user: asString(asRecord(body.metadata).user_id),
      hostedTools: serverTools(body.tools)
    })
  )
}
