/** OpenAI Chat Completions as the real API speaks it: `POST /v1/chat/completions` and `GET /v1/models`. */
import { splitByTokens } from "../tokenizer/Tokenizer.ts"
import { tallyOpenAIChat } from "../tokenizer/ChatTally.ts"
import type { AsyncReply } from "./audio/AudioReply.ts"
import { openAIError } from "./ErrorEnvelopes.ts"
import { invalid, modelNotFound, notJson } from "./OpenAIReplies.ts"
import { arrayField, contentText, field, isRecord, numberField, stringField } from "./Json.ts"
import { type CacheKnobs, promptCache } from "./PromptCache.ts"
import { withPromptTokens } from "./PromptTokens.ts"
import { conversationSeed, planReply } from "./Reply.ts"
import {
  dataFrame,
  header,
  json,
  type SimContext,
  type SimReply,
  type SimRequest,
  type SseReply
} from "./SimResponse.ts"
import {
  finishReason,
  outputFormat,
  splitJson,
  toolMode,
  toolSpecs,
  usageOf,
  validateMessages,
  validateOutputFormat
} from "./OpenAIChatRequest.ts"

const TOKENS_PER_DELTA = 3

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

/** What OpenAI answers before reading a JSON endpoint's fields: 401 without the key, 400 for a body that is not JSON. */
export const refuseOpenAIRequest = (request: SimRequest, context: SimContext): SimReply | undefined => {
  const unauthorized = checkOpenAIAuth(request, context)
  if (unauthorized !== undefined) return unauthorized
  return request.bodyInvalid || !isRecord(request.body) ? notJson() : undefined
}

export const chatCompletions = (
  request: SimRequest,
  context: SimContext,
  replyTokens: number,
  cacheKnobs: CacheKnobs
): SimReply | AsyncReply => {
  const refused = refuseOpenAIRequest(request, context)
  if (refused !== undefined) return refused
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
    const usage = usageOf(promptTokens, plan, promptCache(cacheKnobs, promptTokens))

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
          usage,
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
          usage
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
