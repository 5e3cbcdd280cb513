/** OpenAI Chat Completions as the real API speaks it: `POST /v1/chat/completions` and `GET /v1/models`. */
import { splitByTokens } from "../tokenizer/Tokenizer.ts"
import { tallyOpenAIChat } from "../tokenizer/ChatTally.ts"
import type { AsyncReply } from "./audio/AudioReply.ts"
import { openAIError } from "./ErrorEnvelopes.ts"
import { invalid, modelNotFound } from "./OpenAIReplies.ts"
import { strictSchemaProblem } from "./OpenAIStrictSchema.ts"
import { arrayField, contentText, field, isRecord, numberField, stringField } from "./Json.ts"
import { withPromptTokens } from "./PromptTokens.ts"
import {
  conversationSeed,
  type OutputFormat,
  planReply,
  type ReplyPlan,
  type ToolMode,
  type ToolSpec
} from "./Reply.ts"
import {
  dataFrame,
  header,
  json,
  type SimContext,
  type SimReply,
  type SimRequest,
  type SseReply
} from "./SimResponse.ts"

const TOKENS_PER_DELTA = 3
const ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"])

/** 401 unless `Authorization: Bearer <apiKey>`. */
export const checkOpenAIAuth = (request: SimRequest, context: SimContext): SimReply | undefined => {
  const authorization = header(request, "authorization")
  if (authorization === undefined || !authorization.toLowerCase().startsWith("bearer ")) {
    return json(
      401,
      openAIError(
        401,
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        { code: null }
      )
    )
  }
  const key = authorization.slice(7).trim()
  if (key === context.apiKey) return undefined
  const masked = key.length > 8 ? `${key.slice(0, 3)}***${key.slice(-4)}` : "***"
  return json(
    401,
    openAIError(
      401,
      `Incorrect API key provided: ${masked}. You can find your API key at https://platform.openai.com/account/api-keys.`
    )
  )
}

const toolSpecs = (tools: ReadonlyArray<unknown>): ReadonlyArray<ToolSpec> =>
  tools.flatMap((tool) => {
    const fn = field(tool, "function")
    const name = stringField(fn, "name")
    return name === undefined ? [] : [{ name, schema: field(fn, "parameters") ?? {} }]
  })

const toolMode = (choice: unknown): ToolMode => {
  if (choice === "none") return { _tag: "None" }
  if (choice === "required") return { _tag: "Required" }
  const name = stringField(field(choice, "function"), "name")
  return name === undefined ? { _tag: "Auto" } : { _tag: "Named", name }
}

/** `response_format`: free text, JSON mode, or Structured Outputs with a schema (absent schema → any object). */
const outputFormat = (format: unknown): OutputFormat => {
  switch (stringField(format, "type")) {
    case "json_object":
      return { _tag: "JsonObject" }
    case "json_schema": {
      const schema = field(field(format, "json_schema"), "schema")
      return schema === undefined ? { _tag: "JsonObject" } : { _tag: "JsonSchema", schema }
    }
    default:
      return { _tag: "Text" }
  }
}

/** The API's checks of `response_format` and of strict function schemas, with its words. */
const validateOutputFormat = (
  format: unknown,
  messages: ReadonlyArray<unknown>,
  tools: ReadonlyArray<unknown>
): SimReply | undefined => {
  for (const [index, tool] of tools.entries()) {
    const fn = field(tool, "function")
    if (field(fn, "strict") !== true) continue
    const problem = strictSchemaProblem(field(fn, "parameters") ?? { type: "object", properties: {} })
    if (problem !== undefined) {
      return invalid(
        `Invalid schema for function '${stringField(fn, "name") ?? ""}': ${problem}`,
        `tools[${index}].function.parameters`,
        "invalid_function_parameters"
      )
    }
  }
  const type = stringField(format, "type")
  const spec = field(format, "json_schema")
  const name = stringField(spec, "name")
  if (type === "json_schema" && name === undefined) {
    return invalid(
      "Missing required parameter: 'response_format.json_schema.name'.",
      "response_format.json_schema.name",
      "missing_required_parameter"
    )
  }
  if (type === "json_schema" && field(spec, "strict") === true) {
    const problem = strictSchemaProblem(field(spec, "schema"))
    if (problem !== undefined)
      return invalid(`Invalid schema for response_format '${name}': ${problem}`, "response_format")
  }
  // JSON mode without a schema makes the model emit JSON only if told so, hence the API's demand.
  if (type === "json_object" && !messages.some((message) => /json/i.test(contentText(field(message, "content"))))) {
    return invalid(
      "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
      "messages",
      null
    )
  }
  return undefined
}

/** OpenAI's conversation rules: every tool message answers an earlier tool call and every tool call is answered. */
const validateMessages = (messages: ReadonlyArray<unknown>): SimReply | undefined => {
  const pending = new Map<string, number>()
  for (const [index, message] of messages.entries()) {
    const role = stringField(message, "role")
    if (role === undefined || !ROLES.has(role)) {
      return invalid(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        `messages[${index}].role`,
        "invalid_value"
      )
    }
    if (role === "tool") {
      const id = stringField(message, "tool_call_id")
      if (id === undefined || !pending.has(id)) {
        return invalid(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${index}].role`
        )
      }
      pending.delete(id)
      continue
    }
    if (pending.size > 0) {
      const [, at] = [...pending.entries()][0]!
      return invalid(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...pending.keys()].join(", ")}`,
        `messages.[${at}].role`
      )
    }
    if (role === "assistant") {
      for (const call of arrayField(message, "tool_calls") ?? []) {
        const id = stringField(call, "id")
        if (id !== undefined) pending.set(id, index)
      }
    }
  }
  return undefined
}

const finishReason = (plan: ReplyPlan, forcedByName: boolean): string => {
  if (plan.finish === "tool_call") return forcedByName ? "stop" : "tool_calls"
  return plan.finish === "length" ? "length" : "stop"
}

const usageOf = (promptTokens: number, plan: ReplyPlan) => ({
  prompt_tokens: promptTokens,
  completion_tokens: plan.outputTokens,
  total_tokens: promptTokens + plan.outputTokens,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: plan.thinkingTokens,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
})

const splitJson = (text: string): ReadonlyArray<string> => {
  const size = Math.max(1, Math.ceil(text.length / 3))
  const pieces: Array<string> = []
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size))
  return pieces
}

/** `POST /v1/chat/completions`. */
export const chatCompletions = (
  request: SimRequest,
  context: SimContext,
  replyTokens: number
): SimReply | AsyncReply => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  if (request.bodyInvalid || !isRecord(request.body)) {
    return invalid(
      "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
    )
  }
  const body = request.body
  const model = stringField(body, "model")
  if (model === undefined) return invalid("you must provide a model parameter", null, null)
  const messages = field(body, "messages")
  if (!Array.isArray(messages)) {
    return invalid("Missing required parameter: 'messages'.", "messages", "missing_required_parameter")
  }
  if (messages.length === 0) {
    return invalid(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "messages",
      "empty_array"
    )
  }
  if (context.models !== undefined && !context.models.includes(model)) {
    return modelNotFound(model)
  }
  const stream = field(body, "stream") === true
  if (!stream && field(body, "stream_options") !== undefined && field(body, "stream_options") !== null) {
    return invalid("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
  }
  const badConversation = validateMessages(messages)
  if (badConversation !== undefined) return badConversation
  const responseFormat = field(body, "response_format")
  const badFormat = validateOutputFormat(responseFormat, messages, arrayField(body, "tools") ?? [])
  if (badFormat !== undefined) return badFormat

  const tools = arrayField(body, "tools") ?? []
  const mode = toolMode(field(body, "tool_choice"))
  const last = messages[messages.length - 1]
  const lastUser = [...messages].reverse().find((message) => stringField(message, "role") === "user")
  const stop = field(body, "stop")
  const effort = stringField(body, "reasoning_effort")
  const plan = planReply({
    lastUserText: contentText(field(lastUser, "content")),
    toolResult: stringField(last, "role") === "tool" ? contentText(field(last, "content")) : undefined,
    tools: toolSpecs(tools),
    toolMode: mode,
    thinking: effort !== undefined && effort !== "none",
    maxTokens: numberField(body, "max_completion_tokens") ?? numberField(body, "max_tokens"),
    replyTokens,
    stopSequences:
      typeof stop === "string" ? [stop] : Array.isArray(stop) ? stop.filter((s) => typeof s === "string") : [],
    seed: conversationSeed(messages),
    output: outputFormat(responseFormat)
  })
  return withPromptTokens(tallyOpenAIChat({ messages, tools }), (promptTokens) => {
    const id = `chatcmpl-sim${context.nextId()}`
    const toolCall =
      plan.toolCall === undefined
        ? undefined
        : {
            id: context.toolCallIds === "kimi" ? `functions.${plan.toolCall.name}:0` : `call_${plan.toolCall.key}`,
            type: "function" as const,
            function: { name: plan.toolCall.name, arguments: JSON.stringify(plan.toolCall.arguments) }
          }
    const finish = finishReason(plan, mode._tag === "Named")
    const headers = { "x-request-id": `req_sim${id.slice(11)}` }

    if (!stream) {
      return json(
        200,
        {
          id,
          object: "chat.completion",
          created: context.createdSeconds,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: plan.text ?? null,
                refusal: null,
                ...(plan.thinking === undefined ? {} : { reasoning_content: plan.thinking }),
                ...(toolCall === undefined ? {} : { tool_calls: [toolCall] }),
                annotations: []
              },
              logprobs: null,
              finish_reason: finish
            }
          ],
          usage: usageOf(promptTokens, plan),
          service_tier: "default",
          system_fingerprint: "fp_simulator"
        },
        headers
      )
    }

    const includeUsage = field(field(body, "stream_options"), "include_usage") === true
    const chunk = (delta: unknown, finishReason: string | null = null) =>
      dataFrame({
        id,
        object: "chat.completion.chunk",
        created: context.createdSeconds,
        model,
        system_fingerprint: "fp_simulator",
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
        ...(includeUsage ? { usage: null } : {})
      })
    // OpenAI opens a text reply with `content: ""` and a reply that starts with a tool call with `content: null` on
    // the call's own first chunk: clients (the AI SDK) open a text part for any string content, even an empty one.
    const startsWithCall = plan.text === undefined && plan.thinking === undefined && toolCall !== undefined
    const head = startsWithCall
      ? []
      : [chunk({ role: "assistant", content: plan.text === undefined ? null : "", refusal: null })]
    if (plan.thinking !== undefined) {
      for (const piece of splitByTokens(plan.thinking, TOKENS_PER_DELTA)) head.push(chunk({ reasoning_content: piece }))
    }
    if (plan.text !== undefined) {
      for (const piece of splitByTokens(plan.text, TOKENS_PER_DELTA)) head.push(chunk({ content: piece }))
    }
    if (toolCall !== undefined) {
      const call = {
        index: 0,
        id: toolCall.id,
        type: "function",
        function: { name: toolCall.function.name, arguments: "" }
      }
      head.push(
        chunk(
          startsWithCall
            ? { role: "assistant", content: null, refusal: null, tool_calls: [call] }
            : { tool_calls: [call] }
        )
      )
      for (const piece of splitJson(toolCall.function.arguments)) {
        head.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }))
      }
    }
    const tail = [chunk({}, finish)]
    if (includeUsage) {
      tail.push(
        dataFrame({
          id,
          object: "chat.completion.chunk",
          created: context.createdSeconds,
          model,
          system_fingerprint: "fp_simulator",
          choices: [],
          usage: usageOf(promptTokens, plan)
        })
      )
    }
    tail.push("data: [DONE]\n\n")
    const reply: SseReply = {
      _tag: "Sse",
      headers,
      head,
      tail,
      filler: (n) => chunk({ content: ` filler ${n}.` }),
      error: dataFrame(openAIError(500, "The server had an error while processing your request (simulated).")),
      malformed: `data: {"id":"${id}","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":\n\n`
    }
    return reply
  })
}

/** `GET /v1/models` in OpenAI's shape. */
export const listOpenAIModels = (request: SimRequest, context: SimContext, fallback: ReadonlyArray<string>): SimReply =>
  checkOpenAIAuth(request, context) ??
  json(200, {
    object: "list",
    data: (context.models ?? fallback).map((id) => ({
      id,
      object: "model",
      created: context.createdSeconds,
      owned_by: "simulator"
    }))
  })
