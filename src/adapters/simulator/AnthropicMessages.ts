/**
 * Anthropic Messages as the real API speaks it: `POST /v1/messages` (JSON and the SSE event sequence),
 * `POST /v1/messages/count_tokens` and `GET /v1/models`, with the API's conversation checks and thinking signatures.
 */
import { splitByTokens } from "../tokenizer/Tokenizer.ts"
import { tallyAnthropicMessages } from "../tokenizer/ChatTally.ts"
import type { AsyncReply } from "./audio/AudioReply.ts"
import { type CacheKnobs, type PromptCache, promptCache } from "./PromptCache.ts"
import { withPromptTokens } from "./PromptTokens.ts"
import { arrayField, contentText, field, type JsonRecord, numberField, stringField } from "./Json.ts"
import { conversationSeed, planReply, type ReplyPlan } from "./Reply.ts"
import { eventFrame, json, type SimContext, type SimReply, type SimRequest } from "./SimResponse.ts"
import { signThinking } from "./ThinkingSignature.ts"
import { checkAnthropicAuth, fail, notFound, outputFormat, parse, toolMode, toolSpecs } from "./AnthropicRequest.ts"

const TOKENS_PER_DELTA = 3

/**
 * The input counts every usage object carries, the final `message_delta`'s too: `input_tokens` leaves out the tokens
 * read from or written to the cache.
 */
const tokenCounts = (promptTokens: number, cache: PromptCache) => ({
  input_tokens: promptTokens - cache.read - cache.write,
  cache_creation_input_tokens: cache.write,
  cache_read_input_tokens: cache.read
})

/** A message's `usage` (the reply's and `message_start`'s), with the cache writes split by TTL. */
const usageOf = (promptTokens: number, cache: PromptCache, outputTokens: number) => ({
  ...tokenCounts(promptTokens, cache),
  cache_creation: {
    ephemeral_5m_input_tokens: cache.write - cache.write1h,
    ephemeral_1h_input_tokens: cache.write1h
  },
  output_tokens: outputTokens,
  service_tier: "standard"
})

const stopReason = (plan: ReplyPlan): string =>
  plan.finish === "tool_call"
    ? "tool_use"
    : plan.finish === "length"
      ? "max_tokens"
      : plan.finish === "stop_sequence"
        ? "stop_sequence"
        : "end_turn"

const contentOf = (plan: ReplyPlan, secret: string): ReadonlyArray<JsonRecord> => [
  ...(plan.thinking === undefined
    ? []
    : [{ type: "thinking", thinking: plan.thinking, signature: signThinking(secret, plan.thinking) }]),
  // No `citations` key: the API sends one only when there are citations, and `@ai-sdk/anthropic` refuses a null.
  ...(plan.text === undefined ? [] : [{ type: "text", text: plan.text }]),
  ...(plan.toolCall === undefined
    ? []
    : [
        { type: "tool_use", id: `toolu_${plan.toolCall.key}`, name: plan.toolCall.name, input: plan.toolCall.arguments }
      ])
]

/**
 * Anthropic's server-side web search, as the simulated model uses it: offered `web_search_…` and asked to search, one
 * search (a `server_tool_use` and its `web_search_tool_result`) before the answer, counted in `usage.server_tool_use`.
 */
const searchBlocks = (
  tools: ReadonlyArray<unknown>,
  userText: string,
  answersTools: boolean,
  suffix: string
): ReadonlyArray<JsonRecord> => {
  const offered = tools.some((tool) => stringField(tool, "type")?.startsWith("web_search_") === true)
  if (!offered || answersTools || !/\bsearch\b/i.test(userText)) return []
  const query = userText.split(/\s+/).filter(Boolean).slice(-8).join(" ")
  const id = `srvtoolu_sim${suffix}`
  const url = `https://example.com/search?q=${encodeURIComponent(query)}`
  return [
    { type: "server_tool_use", id, name: "web_search", input: { query } },
    {
      type: "web_search_tool_result",
      tool_use_id: id,
      content: [
        { type: "web_search_result", url, title: `Results for ${query}`, encrypted_content: "sim", page_age: null }
      ]
    }
  ]
}

const blockEvents = (block: JsonRecord, index: number): { readonly open: Array<string>; readonly close: string } => {
  const delta = (payload: JsonRecord) =>
    eventFrame("content_block_delta", { type: "content_block_delta", index, delta: payload })
  const start = (contentBlock: JsonRecord) =>
    eventFrame("content_block_start", { type: "content_block_start", index, content_block: contentBlock })
  const close = eventFrame("content_block_stop", { type: "content_block_stop", index })
  switch (block.type) {
    case "thinking": {
      const pieces = splitByTokens(String(block.thinking), TOKENS_PER_DELTA)
      return {
        open: [
          start({ type: "thinking", thinking: "", signature: "" }),
          ...pieces.map((thinking) => delta({ type: "thinking_delta", thinking })),
          delta({ type: "signature_delta", signature: block.signature as string })
        ],
        close
      }
    }
    case "server_tool_use":
      return {
        open: [
          start({ ...block, input: {} }),
          delta({ type: "input_json_delta", partial_json: JSON.stringify(block.input) })
        ],
        close
      }
    case "web_search_tool_result":
      return { open: [start(block)], close }
    case "text": {
      const pieces = splitByTokens(String(block.text), TOKENS_PER_DELTA)
      return {
        open: [start({ type: "text", text: "" }), ...pieces.map((text) => delta({ type: "text_delta", text }))],
        close
      }
    }
    default: {
      const input = JSON.stringify(block.input)
      const size = Math.max(1, Math.ceil(input.length / 3))
      const pieces: Array<string> = []
      for (let at = 0; at < input.length; at += size) pieces.push(input.slice(at, at + size))
      return {
        open: [
          start({ type: "tool_use", id: block.id, name: block.name, input: {} }),
          ...pieces.map((partial_json) => delta({ type: "input_json_delta", partial_json }))
        ],
        close
      }
    }
  }
}

const fillerDelta = (block: JsonRecord | undefined, index: number, n: number): string => {
  const delta =
    block?.type === "thinking"
      ? { type: "thinking_delta", thinking: ` more thought ${n}.` }
      : block?.type === "tool_use"
        ? { type: "input_json_delta", partial_json: " " }
        : { type: "text_delta", text: ` filler ${n}.` }
  return eventFrame("content_block_delta", { type: "content_block_delta", index, delta })
}

/** `POST /v1/messages`. */
export const createMessage = (
  request: SimRequest,
  context: SimContext,
  replyTokens: number,
  cacheKnobs: CacheKnobs
): SimReply | AsyncReply => {
  const suffix = context.nextId()
  const requestId = `req_sim${suffix}`
  const unauthorized = checkAnthropicAuth(request, context, requestId)
  if (unauthorized !== undefined) return unauthorized
  const parsed = parse(request, context, true)
  if (typeof parsed === "string") return fail(400, parsed, requestId)
  const { model, messages, turns, body } = parsed
  if (notFound(context, model)) return fail(404, `model: ${model}`, requestId)

  const tools = arrayField(body, "tools") ?? []
  const system = field(body, "system")
  const thinkingType = stringField(field(body, "thinking"), "type")
  const lastTurn = turns[turns.length - 1]
  const lastUser = [...turns].reverse().find((turn) => turn.role === "user")
  const results = lastTurn?.role === "user" ? lastTurn.blocks.filter((block) => block.type === "tool_result") : []
  const stop = arrayField(body, "stop_sequences") ?? []
  const plan = planReply({
    lastUserText: contentText(lastUser?.blocks.filter((block) => block.type === "text") ?? []),
    toolResult: results.length > 0 ? results.map((block) => contentText(block.content)).join("\n") : undefined,
    tools: toolSpecs(tools),
    toolMode: toolMode(field(body, "tool_choice")),
    thinking: thinkingType === "enabled" || thinkingType === "adaptive",
    maxTokens: numberField(body, "max_tokens"),
    replyTokens,
    stopSequences: stop.filter((s): s is string => typeof s === "string"),
    seed: conversationSeed(messages),
    output: outputFormat(body)
  })
  return withPromptTokens(tallyAnthropicMessages({ messages, system, tools }), (promptTokens) => {
    const cache = promptCache(cacheKnobs, promptTokens)
    const id = `msg_sim${suffix}`
    const lastText = contentText(lastUser?.blocks.filter((block) => block.type === "text") ?? [])
    const search = searchBlocks(tools, lastText, results.length > 0, suffix)
    const content = [...search, ...contentOf(plan, context.thinkingSecret)]
    const searched = search.length > 0 ? { server_tool_use: { web_search_requests: 1 } } : {}
    const headers = { "request-id": requestId }

    if (field(body, "stream") !== true) {
      return json(
        200,
        {
          id,
          type: "message",
          role: "assistant",
          model,
          content,
          stop_reason: stopReason(plan),
          stop_sequence: plan.stopSequence ?? null,
          usage: { ...usageOf(promptTokens, cache, plan.outputTokens), ...searched }
        },
        headers
      )
    }

    const head = [
      eventFrame("message_start", {
        type: "message_start",
        message: {
          id,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: usageOf(promptTokens, cache, 1)
        }
      }),
      eventFrame("ping", { type: "ping" })
    ]
    const tail: Array<string> = []
    content.forEach((block, index) => {
      const events = blockEvents(block, index)
      if (index === content.length - 1) {
        head.push(...events.open)
        tail.push(events.close)
      } else {
        head.push(...events.open, events.close)
      }
    })
    tail.push(
      eventFrame("message_delta", {
        type: "message_delta",
        delta: { stop_reason: stopReason(plan), stop_sequence: plan.stopSequence ?? null },
        usage: { ...tokenCounts(promptTokens, cache), output_tokens: plan.outputTokens, ...searched }
      }),
      eventFrame("message_stop", { type: "message_stop" })
    )
    const lastIndex = Math.max(0, content.length - 1)
    return {
      _tag: "Sse",
      headers,
      head,
      tail,
      filler: (n) => fillerDelta(content[lastIndex], lastIndex, n),
      error: eventFrame("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }),
      malformed: `event: content_block_delta\ndata: {"type":"content_block_delta","index":${lastIndex},"delta":{\n\n`
    }
  })
}

/** `POST /v1/messages/count_tokens`: the same count `usage.input_tokens` reports. */
export const countTokens = (request: SimRequest, context: SimContext): SimReply | AsyncReply => {
  const requestId = `req_sim${context.nextId()}`
  const unauthorized = checkAnthropicAuth(request, context, requestId)
  if (unauthorized !== undefined) return unauthorized
  const parsed = parse(request, context, false)
  if (typeof parsed === "string") return fail(400, parsed, requestId)
  const tools = arrayField(parsed.body, "tools") ?? []
  const tally = tallyAnthropicMessages({ messages: parsed.messages, system: field(parsed.body, "system"), tools })
  return withPromptTokens(tally, (inputTokens) => json(200, { input_tokens: inputTokens }, { "request-id": requestId }))
}

/** `GET /v1/models` in Anthropic's shape (chosen when the request carries `anthropic-version`). */
export const listAnthropicModels = (
  request: SimRequest,
  context: SimContext,
  fallback: ReadonlyArray<string>
): SimReply => {
  const requestId = `req_sim${context.nextId()}`
  const unauthorized = checkAnthropicAuth(request, context, requestId)
  if (unauthorized !== undefined) return unauthorized
  const ids = context.models ?? fallback
  return json(200, {
    data: ids.map((id) => ({
      type: "model",
      id,
      display_name: id,
      created_at: "2025-01-01T00:00:00Z",
      max_input_tokens: 200000,
      max_tokens: 64000,
      capabilities: null
    })),
    has_more: false,
    first_id: ids[0] ?? null,
    last_id: ids[ids.length - 1] ?? null
  })
}
