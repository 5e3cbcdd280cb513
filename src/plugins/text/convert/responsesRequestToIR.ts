/**
 * An OpenAI Responses API request (`POST /v1/responses`) in the chat IR.
 *
 * - `input` is a string (one user message) or a list of items. Messages of role `system`/`developer` and
 *   `instructions` become the IR system prompt; everything the model said between two user turns (reasoning items,
 *   assistant messages, function calls) becomes one assistant turn, and consecutive `function_call_output`s one tool
 *   turn, as Anthropic and Gemini need them.
 * - A reasoning item's summary is the thinking text; its `encrypted_content` carries the issuing vendor's signature
 *   (see `readResponsesEncrypted`), so a conversation can move between vendors and each gets back only its own.
 * - What the IR cannot carry (`input_file` parts, prompt templates, the output items of built-in tools) is listed in
 *   `nativeOnly`: served by an `openai-responses` upstream, refused elsewhere. Hosted tools (every tool type but
 *   `function` and `namespace`) are listed in `hostedTools`: served there, left out or refused elsewhere.
 * - A `namespace` tool's function tools go in `tools` under flat names (toolNamespaces.ts), and a `function_call`
 *   item with a `namespace` under the same name.
 * - `item_reference`s, `previous_response_id` and `store` are the gateway's (resolved before this runs); `metadata`,
 *   `include`, `truncation`, `service_tier`, `top_logprobs`, `max_tool_calls` are not model input and are dropped here.
 */
import { Result } from "effect"
import type { AssistantPart, ChatRequest, Converted, Message, TextPart, ToolResultPart, UserPart } from "./ChatIR.ts"
import { checkToolPairing, convertError, optionalFlag } from "./ChatIR.ts"
import { imageSourceFromUrl } from "./dataUrl.ts"
import {
  asArray,
  asNumber,
  asRecord,
  asString,
  compact,
  isRecord,
  type JsonRecord,
  label,
  parseJsonObject
} from "./json.ts"
import { readResponsesEncrypted, unpackToolId } from "./thinkingSignature.ts"

import { formatOf, type Hosted, NATIVE, type Problem, toolChoiceOf, toolsOf } from "./responsesSettings.ts"
import { type ToolNames, toolNamesOf } from "./toolNamespaces.ts"
import { contentParts, textPart } from "./contentParts.ts"

/** A message's content as user parts; `input_file` and unknown parts are noted in `nativeOnly`. */
const userParts = (content: unknown, param: string, nativeOnly: Array<Problem>): Converted<ReadonlyArray<UserPart>> =>
  contentParts(content, param, (part, at): Converted<UserPart | undefined> => {
    switch (part.type) {
      case "input_text":
      case "output_text":
        return textPart(part, at)
      case "refusal":
        return textPart(part, at, "refusal")
      case "input_image": {
        const url = asString(part.image_url)
        if (url !== undefined) return Result.succeed({ type: "image", source: imageSourceFromUrl(url) })
        if (typeof part.file_id !== "string") {
          return convertError(`${at}.image_url`, "image_url must be a string (a URL or a data URL)")
        }
        nativeOnly.push({ param: at, message: `an image by file_id ${NATIVE}` })
        return Result.succeed(undefined)
      }
      case "input_file": {
        const data = asString(part.file_data)
        const source = data === undefined ? undefined : imageSourceFromUrl(data)
        // An image sent as a file is still an image; any other document needs OpenAI's own file handling.
        if (source?.kind === "base64" && source.mediaType.startsWith("image/")) {
          return Result.succeed({ type: "image", source })
        }
        nativeOnly.push({ param: at, message: `an input_file part ${NATIVE}` })
        return Result.succeed(undefined)
      }
      default:
        return convertError(`${at}.type`, `unsupported content part type '${label(part.type)}'`)
    }
  })

const textParts = (content: unknown, param: string): Converted<ReadonlyArray<TextPart>> => {
  const none: Array<Problem> = []
  const parts = userParts(content, param, none)
  if (Result.isFailure(parts)) return Result.fail(parts.failure)
  if (none.length > 0 || parts.success.some((p) => p.type !== "text")) {
    return convertError(none[0]?.param ?? param, "only text is allowed here")
  }
  return Result.succeed(parts.success as ReadonlyArray<TextPart>)
}

const reasoningPart = (item: JsonRecord): AssistantPart => {
  const summary = asArray(item.summary).flatMap((s) => {
    const text = asString(asRecord(s).text)
    return text === undefined ? [] : [text]
  })
  const content = asArray(item.content).flatMap((s) => {
    const text = asString(asRecord(s).text)
    return text === undefined ? [] : [text]
  })
  const text = (summary.length > 0 ? summary : content).join("\n\n")
  const encrypted = readResponsesEncrypted(asString(item.encrypted_content))
  switch (encrypted.type) {
    case "redacted":
      return { type: "redacted_thinking", data: encrypted.data }
    case "unsigned":
      return { type: "thinking", text }
    case "signed":
      return { type: "thinking", text, signature: encrypted.signature, signatureOrigin: encrypted.origin }
  }
}

/** The output of a function call: a string, or input_text/input_image parts. */
const toolResult = (item: JsonRecord, param: string): Converted<ToolResultPart> => {
  const callId = asString(item.call_id)
  if (callId === undefined) return convertError(`${param}.call_id`, "call_id must be a string")
  const none: Array<Problem> = []
  const output =
    typeof item.output === "string"
      ? Result.succeed([{ type: "text" as const, text: item.output }])
      : userParts(item.output, `${param}.output`, none)
  if (Result.isFailure(output)) return Result.fail(output.failure)
  if (none.length > 0) return convertError(none[0].param, "a function call output may hold only text and images")
  return Result.succeed({
    type: "tool_result",
    toolCallId: unpackToolId(callId).id,
    content: output.success,
    isError: false
  })
}

interface Conversation {
  readonly system: Array<TextPart>
  readonly messages: Array<Message>
  /** Index in the client's `input` of each IR message, for error paths. */
  readonly origins: Array<number>
}

/**
 * `message` into the conversation: joined to the last message when that one has its role (consecutive items of one
 * role are one turn to the model), else a new message, from input item `index`.
 */
const pushMessage = (conversation: Conversation, message: Message, index: number) => {
  const last = conversation.messages.at(-1)
  if (last?.role !== message.role) {
    conversation.messages.push(message)
    conversation.origins.push(index)
    return
  }
  // The same role on both sides, so the same kind of parts: the union cannot say so by itself.
  conversation.messages[conversation.messages.length - 1] = {
    role: last.role,
    content: [...last.content, ...message.content]
  } as Message
}

const pushAssistant = (conversation: Conversation, parts: ReadonlyArray<AssistantPart>, index: number) =>
  pushMessage(conversation, { role: "assistant", content: parts }, index)

const added: Converted<undefined> = Result.succeed(undefined)

/** A `message` item (the default type): system text gathered, consecutive user turns merged into one message. */
const addMessage = (
  conversation: Conversation,
  item: JsonRecord,
  i: number,
  nativeOnly: Array<Problem>
): Converted<undefined> => {
  const param = `input.${i}`
  switch (item.role) {
    case "system":
    case "developer": {
      const texts = textParts(item.content, `${param}.content`)
      if (Result.isFailure(texts)) return Result.fail(texts.failure)
      conversation.system.push(...texts.success)
      return added
    }
    case "user": {
      const parts = userParts(item.content, `${param}.content`, nativeOnly)
      if (Result.isFailure(parts)) return Result.fail(parts.failure)
      pushMessage(conversation, { role: "user", content: parts.success }, i)
      return added
    }
    case "assistant": {
      const texts = textParts(item.content, `${param}.content`)
      if (Result.isFailure(texts)) return Result.fail(texts.failure)
      pushAssistant(
        conversation,
        texts.success.filter((t) => t.text !== ""),
        i
      )
      return added
    }
    default:
      return convertError(`${param}.role`, `unsupported role '${label(item.role)}'`)
  }
}

/** A function call of the model's, into its assistant turn. */
const addFunctionCall = (conversation: Conversation, item: JsonRecord, i: number, names: ToolNames) => {
  const param = `input.${i}`
  const callId = asString(item.call_id)
  const name = asString(item.name)
  if (callId === undefined) return convertError(`${param}.call_id`, "call_id must be a string")
  if (name === undefined) return convertError(`${param}.name`, "name must be a string")
  const args = parseJsonObject(asString(item.arguments) ?? "")
  if (args === undefined) return convertError(`${param}.arguments`, "arguments must be a JSON object")
  const { id, signature } = unpackToolId(callId)
  const namespace = asString(item.namespace)
  const called = namespace === undefined ? name : names.flat(namespace, name)
  pushAssistant(conversation, [compact({ type: "tool_call" as const, id, name: called, input: args, signature })], i)
  return added
}

/** A function call's output, merged with the tool results just before it. */
const addFunctionOutput = (conversation: Conversation, item: JsonRecord, i: number): Converted<undefined> => {
  const result = toolResult(item, `input.${i}`)
  if (Result.isFailure(result)) return Result.fail(result.failure)
  pushMessage(conversation, { role: "tool", content: [result.success] }, i)
  return added
}

/** Any other item: reasoning joins the assistant turn; built-in tools' items are OpenAI's own (`nativeOnly`). */
const addItem = (
  conversation: Conversation,
  item: JsonRecord,
  i: number,
  names: ToolNames,
  nativeOnly: Array<Problem>
): Converted<undefined> => {
  const param = `input.${i}`
  const type = item.type
  switch (type) {
    case "reasoning":
      pushAssistant(conversation, [reasoningPart(item)], i)
      return added
    case "function_call":
      return addFunctionCall(conversation, item, i, names)
    case "function_call_output":
      return addFunctionOutput(conversation, item, i)
    case "item_reference":
      return convertError(`${param}.id`, `item '${label(item.id)}' was not found`)
    default:
      if (typeof type !== "string") return convertError(`${param}.type`, "type must be a string")
      // Built-in tools' calls and outputs (web_search_call, computer_call_output, …): OpenAI's own.
      nativeOnly.push({ param, message: `an input item of type '${type}' ${NATIVE}` })
      return added
  }
}

const inputItems = (
  input: ReadonlyArray<unknown>,
  names: ToolNames,
  nativeOnly: Array<Problem>
): Converted<Conversation> => {
  const conversation: Conversation = { system: [], messages: [], origins: [] }
  for (let i = 0; i < input.length; i++) {
    const item = asRecord(input[i])
    const next =
      (item.type ?? "message") === "message"
        ? addMessage(conversation, item, i, nativeOnly)
        : addItem(conversation, item, i, names, nativeOnly)
    if (Result.isFailure(next)) return Result.fail(next.failure)
  }
  return Result.succeed(conversation)
}

export const responsesRequestToIR = (body: unknown): Converted<ChatRequest> => {
  if (!isRecord(body)) return convertError("", "request body must be a JSON object")
  const model = asString(body.model)
  if (model === undefined) return convertError("model", "model must be a string")
  const nativeOnly: Array<Problem> = []
  const input = typeof body.input === "string" ? [{ role: "user", content: body.input }] : body.input
  if (!Array.isArray(input)) return convertError("input", "input must be a string or an array of input items")
  const names = toolNamesOf(body.tools)
  const conversation = inputItems(input, names, nativeOnly)
  if (Result.isFailure(conversation)) return Result.fail(conversation.failure)
  const { messages, origins } = conversation.success
  if (messages.length === 0) return convertError("input", "input must hold at least one message")
  const instructions =
    typeof body.instructions === "string"
      ? Result.succeed(body.instructions === "" ? [] : [{ type: "text" as const, text: body.instructions }])
      : body.instructions === undefined || body.instructions === null
        ? Result.succeed([])
        : Array.isArray(body.instructions)
          ? Result.map(inputItems(body.instructions, names, nativeOnly), (c) => c.system)
          : convertError("instructions", "instructions must be a string")
  if (Result.isFailure(instructions)) return Result.fail(instructions.failure)
  const pairing = checkToolPairing(messages, (index) => `input.${origins[index] ?? 0}`)
  if (Result.isFailure(pairing)) return Result.fail(pairing.failure)
  const hosted: Array<Hosted> = []
  const tools = toolsOf(body.tools, names, nativeOnly, hosted)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const choice = toolChoiceOf(body.tool_choice, tools.success, nativeOnly)
  const format = formatOf(body.text)
  if (Result.isFailure(format)) return Result.fail(format.failure)
  const parallel = optionalFlag(body.parallel_tool_calls, "parallel_tool_calls")
  if (Result.isFailure(parallel)) return Result.fail(parallel.failure)
  const maxTokens = asNumber(body.max_output_tokens)
  if (
    body.max_output_tokens !== undefined &&
    body.max_output_tokens !== null &&
    (maxTokens === undefined || !Number.isInteger(maxTokens) || maxTokens < 1)
  ) {
    return convertError("max_output_tokens", "max_output_tokens must be a positive integer")
  }
  if (body.prompt !== undefined && body.prompt !== null)
    nativeOnly.push({ param: "prompt", message: `a prompt template ${NATIVE}` })
  const effort = asString(asRecord(body.reasoning).effort)
  return Result.succeed(
    compact({
      model,
      system: [...instructions.success, ...conversation.success.system],
      messages,
      tools: choice.tools,
      toolChoice: choice.toolChoice,
      parallelToolCalls: parallel.success,
      maxTokens,
      temperature: asNumber(body.temperature),
      topP: asNumber(body.top_p),
      responseFormat: format.success,
      reasoning: effort === undefined ? undefined : { effort },
      stream: body.stream === true,
      user: asString(body.safety_identifier) ?? asString(body.user),
      promptCacheKey: asString(body.prompt_cache_key),
      nativeOnly: nativeOnly.length > 0 ? nativeOnly : undefined,
      hostedTools: hosted.length > 0 ? hosted : undefined
    })
  )
}
