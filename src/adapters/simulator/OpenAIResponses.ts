/**
 * OpenAI's Responses API as the real API speaks it: `POST /v1/responses`, answered with a `Response` object or, when
 * streamed, its typed events (`event:` lines, a `sequence_number` on each, no `[DONE]`). The reply's content is the
 * simulated model's (`planReply`), the same as the chat route's for the same turn.
 */
import { type OpenAIChatInput, tallyOpenAIChat } from "../tokenizer/ChatTally.ts"
import type { AsyncReply } from "./audio/AudioReply.ts"
import { arrayField, contentText, field, isRecord, type JsonRecord, stringField } from "./Json.ts"
import { refuseOpenAIRequest } from "./OpenAIChat.ts"
import { modelNotFound } from "./OpenAIReplies.ts"
import {
  itemType,
  maxOutputTokens,
  openReasoning,
  outputFormat,
  readResponsesRequest,
  reasoningOn,
  type ResponsesRequest,
  sealReasoning,
  summaryText,
  toolMode,
  toolSpecs
} from "./OpenAIResponsesRequest.ts"
import { streamReply } from "./OpenAIResponsesStream.ts"
import { type CacheKnobs, type PromptCache, promptCache } from "./PromptCache.ts"
import { withPromptTokens } from "./PromptTokens.ts"
import { conversationSeed, planReply, type ReplyPlan } from "./Reply.ts"
import { json, type SimContext, type SimReply, type SimRequest } from "./SimResponse.ts"

type Event = JsonRecord

/** A tool as the response echoes it: function tools with every field the API fills in. */
const echoTool = (tool: unknown): unknown => {
  if (!isRecord(tool) || tool.type !== "function") return tool
  return {
    type: "function",
    name: tool.name,
    description: tool.description ?? null,
    parameters: tool.parameters ?? null,
    // The Responses API makes function tools strict unless told otherwise.
    strict: tool.strict ?? true
  }
}

const echoFormat = (format: unknown): unknown => {
  if (!isRecord(format) || format.type !== "json_schema") return isRecord(format) ? format : { type: "text" }
  return {
    type: "json_schema",
    ...(typeof format.description === "string" ? { description: format.description } : {}),
    name: format.name,
    schema: format.schema,
    strict: format.strict ?? false
  }
}

/** The request's settings as every `Response` repeats them. */
const settingsOf = (body: JsonRecord) => {
  const reasoning = field(body, "reasoning")
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    max_tool_calls: body.max_tool_calls ?? null,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    prompt_cache_key: body.prompt_cache_key ?? null,
    reasoning: isRecord(reasoning)
      ? { effort: reasoning.effort ?? "medium", summary: reasoning.summary ?? reasoning.generate_summary ?? null }
      : { effort: null, summary: null },
    safety_identifier: body.safety_identifier ?? null,
    service_tier: "default",
    store: body.store ?? true,
    temperature: body.temperature ?? 1,
    text: {
      format: echoFormat(field(field(body, "text"), "format")),
      verbosity: field(field(body, "text"), "verbosity") ?? "medium"
    },
    tool_choice: body.tool_choice ?? "auto",
    tools: (arrayField(body, "tools") ?? []).map(echoTool),
    top_logprobs: body.top_logprobs ?? 0,
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? "disabled"
  }
}

/** `input_tokens` is every input token, cached ones included; the details say how many were read or written. */
const usageOf = (inputTokens: number, plan: ReplyPlan, cache: PromptCache) => ({
  input_tokens: inputTokens,
  input_tokens_details: { cached_tokens: cache.read, cache_write_tokens: cache.write },
  output_tokens: plan.outputTokens,
  output_tokens_details: { reasoning_tokens: plan.thinkingTokens },
  total_tokens: inputTokens + plan.outputTokens
})

/** The output items, in order: reasoning, then the message or the function call. */
const outputOf = (plan: ReplyPlan, request: ResponsesRequest, suffix: string, secret: string): ReadonlyArray<Event> => {
  const items: Array<Event> = []
  if (plan.thinking !== undefined) {
    const reasoning = field(request.body, "reasoning")
    const summarized = typeof (field(reasoning, "summary") ?? field(reasoning, "generate_summary")) === "string"
    const sealed = (arrayField(request.body, "include") ?? []).includes("reasoning.encrypted_content")
    items.push({
      id: `rs_sim${suffix}`,
      type: "reasoning",
      summary: summarized ? [{ type: "summary_text", text: plan.thinking }] : [],
      ...(sealed ? { encrypted_content: sealReasoning(secret, plan.thinking) } : {})
    })
  }
  if (plan.text !== undefined) {
    items.push({
      id: `msg_sim${suffix}`,
      type: "message",
      status: plan.finish === "length" ? "incomplete" : "completed",
      content: [{ type: "output_text", annotations: [], logprobs: [], text: plan.text }],
      role: "assistant"
    })
  }
  if (plan.toolCall !== undefined) {
    items.push({
      id: `fc_sim${suffix}`,
      type: "function_call",
      status: "completed",
      arguments: JSON.stringify(plan.toolCall.arguments),
      call_id: `call_${plan.toolCall.key}`,
      name: plan.toolCall.name
    })
  }
  return items
}

/**
 * OpenAI's hosted web search, as the simulated model uses it: when the request offers a `web_search` tool and the
 * last user message asks to search, one search (a `web_search_call` item with its query and sources) comes before the
 * answer. OpenAI bills each search apart from tokens, so usage is as without it.
 */
const webSearchItem = (request: ResponsesRequest, userText: string, suffix: string): Event | undefined => {
  const offered = request.tools.some((tool) => stringField(tool, "type")?.startsWith("web_search") === true)
  if (!offered || !/\bsearch\b/i.test(userText)) return undefined
  const query = userText.split(/\s+/).filter(Boolean).slice(-8).join(" ")
  return {
    id: `ws_sim${suffix}`,
    type: "web_search_call",
    status: "completed",
    action: {
      type: "search",
      query,
      sources: [{ type: "url", url: `https://example.com/search?q=${encodeURIComponent(query)}` }]
    }
  }
}

/** Text of the last user message, and the function outputs the conversation ends with (the turn they answer). */
const lastTurn = (
  items: ReadonlyArray<JsonRecord>
): { readonly userText: string; readonly toolResult: string | undefined } => {
  const user = [...items].reverse().find((item) => itemType(item) === "message" && item.role === "user")
  const outputs: Array<string> = []
  for (let at = items.length - 1; at >= 0 && itemType(items[at]!) === "function_call_output"; at--) {
    const output = items[at]!.output
    outputs.unshift(typeof output === "string" ? output : contentText(output))
  }
  return {
    userText: contentText(field(user, "content")),
    toolResult: outputs.length > 0 ? outputs.join("\n") : undefined
  }
}

const chatPart = (part: unknown): unknown => {
  const type = stringField(part, "type")
  if (type === "output_text") return { type: "text", text: stringField(part, "text") ?? "" }
  if (type === "refusal") return { type: "text", text: stringField(part, "refusal") ?? "" }
  if (type === "input_file") return { type: "file" }
  return part
}

/** The request as chat messages, for the tokenizer's count of input tokens. */
const chatInput = (request: ResponsesRequest, secret: string): OpenAIChatInput => {
  const instructions = stringField(request.body, "instructions")
  const messages = request.items.map((item): unknown => {
    switch (itemType(item)) {
      case "message":
        return { role: item.role, content: Array.isArray(item.content) ? item.content.map(chatPart) : item.content }
      case "function_call":
        return { role: "assistant", tool_calls: [{ function: { name: item.name, arguments: item.arguments } }] }
      case "function_call_output":
        return { role: "tool", content: Array.isArray(item.output) ? item.output.map(chatPart) : item.output }
      case "reasoning": {
        const sealed = stringField(item, "encrypted_content")
        const thinking = sealed === undefined ? undefined : openReasoning(secret, sealed)
        return { role: "assistant", reasoning_content: thinking ?? summaryText(item) }
      }
      default:
        return { role: "assistant", content: JSON.stringify(item) }
    }
  })
  return {
    messages: instructions === undefined ? messages : [{ role: "developer", content: instructions }, ...messages],
    tools: request.tools
  }
}

/** `POST /v1/responses`. */
export const createResponse = (
  request: SimRequest,
  context: SimContext,
  replyTokens: number,
  cacheKnobs: CacheKnobs
): SimReply | AsyncReply => {
  const refused = refuseOpenAIRequest(request, context)
  if (refused !== undefined) return refused
  const parsed = readResponsesRequest(request.body as Readonly<Record<string, unknown>>, context.thinkingSecret)
  if ("_tag" in parsed) return parsed
  const { body, model, items } = parsed
  if (context.models !== undefined && !context.models.includes(model)) return modelNotFound(model)

  const turn = lastTurn(items)
  const plan = planReply({
    lastUserText: turn.userText,
    toolResult: turn.toolResult,
    tools: toolSpecs(parsed.tools),
    toolMode: toolMode(body.tool_choice),
    thinking: reasoningOn(body),
    maxTokens: maxOutputTokens(body),
    replyTokens,
    stopSequences: [],
    seed: conversationSeed(items),
    output: outputFormat(body)
  })
  return withPromptTokens(tallyOpenAIChat(chatInput(parsed, context.thinkingSecret)), (inputTokens) => {
    const suffix = context.nextId()
    const id = `resp_sim${suffix}`
    const headers = { "x-request-id": `req_sim${suffix}` }
    const search = turn.toolResult === undefined ? webSearchItem(parsed, turn.userText, suffix) : undefined
    const output = [
      ...(search === undefined ? [] : [search]),
      ...outputOf(plan, parsed, suffix, context.thinkingSecret)
    ]
    const incomplete = plan.finish === "length"
    const settings = settingsOf(body)
    const response = (status: string, done: boolean) => ({
      id,
      object: "response",
      created_at: context.createdSeconds,
      status,
      background: false,
      completed_at: status === "completed" ? context.createdSeconds : null,
      error: null,
      incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
      model,
      output: done ? output : [],
      ...settings,
      ...(done ? { usage: usageOf(inputTokens, plan, promptCache(cacheKnobs, inputTokens)) } : {}),
      metadata: body.metadata ?? {}
    })
    const final = incomplete ? "incomplete" : "completed"
    if (body.stream !== true) return json(200, response(final, true), headers)

    return streamReply(output, headers, response("in_progress", false), response(final, true))
  })
}
