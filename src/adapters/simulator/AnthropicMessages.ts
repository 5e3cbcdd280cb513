/**
 * Anthropic Messages as the real API speaks it: `POST /v1/messages` (JSON and the SSE event sequence),
 * `POST /v1/messages/count_tokens` and `GET /v1/models`, with the API's conversation checks and thinking signatures.
 */
import { splitByTokens } from "../tokenizer/Tokenizer.ts"
import { tallyAnthropicMessages } from "../tokenizer/ChatTally.ts"
import type { AsyncReply } from "./audio/AudioReply.ts"
import { withPromptTokens } from "./PromptTokens.ts"
import { anthropicError } from "./ErrorEnvelopes.ts"
import { arrayField, contentText, field, isRecord, type JsonRecord, numberField, stringField } from "./Json.ts"
import {
  conversationSeed,
  type OutputFormat,
  planReply,
  type ReplyPlan,
  type ToolMode,
  type ToolSpec
} from "./Reply.ts"
import { eventFrame, header, json, type SimContext, type SimReply, type SimRequest } from "./SimResponse.ts"
import { signThinking, verifyThinking } from "./ThinkingSignature.ts"

const TOKENS_PER_DELTA = 3
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/

interface Turn {
  readonly role: string
  readonly blocks: ReadonlyArray<JsonRecord>
}

const fail = (status: number, message: string, requestId: string): SimReply =>
  json(status, anthropicError(status, message, requestId), { "request-id": requestId })

/** 401 unless `x-api-key` (or `Authorization: Bearer`) carries the key. */
export const checkAnthropicAuth = (
  request: SimRequest,
  context: SimContext,
  requestId: string
): SimReply | undefined => {
  const bearer = header(request, "authorization")
  const key =
    header(request, "x-api-key") ?? (bearer?.toLowerCase().startsWith("bearer ") ? bearer.slice(7).trim() : undefined)
  if (key === undefined) return fail(401, "x-api-key header is required", requestId)
  return key === context.apiKey ? undefined : fail(401, "invalid x-api-key", requestId)
}

const blocksOf = (content: unknown): ReadonlyArray<JsonRecord> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    : Array.isArray(content)
      ? content.filter(isRecord)
      : []

/** The API merges consecutive turns of the same role before checking the conversation. */
const turnsOf = (messages: ReadonlyArray<unknown>): ReadonlyArray<Turn> => {
  const turns: Array<{ role: string; blocks: Array<JsonRecord> }> = []
  for (const message of messages) {
    const role = stringField(message, "role") ?? "user"
    const blocks = blocksOf(field(message, "content"))
    const previous = turns[turns.length - 1]
    if (previous !== undefined && previous.role === role) previous.blocks.push(...blocks)
    else turns.push({ role, blocks: [...blocks] })
  }
  return turns
}

const idsOf = (blocks: ReadonlyArray<JsonRecord>, type: string, key: string): ReadonlyArray<string> =>
  blocks.filter((block) => block.type === type).flatMap((block) => (typeof block[key] === "string" ? [block[key]] : []))

const validateTurns = (turns: ReadonlyArray<Turn>, secret: string, thinkingOn: boolean): string | undefined => {
  for (const [index, turn] of turns.entries()) {
    for (const [at, block] of turn.blocks.entries()) {
      if (block.type === "tool_use" && !(typeof block.id === "string" && TOOL_USE_ID.test(block.id))) {
        return `messages.${index}.content.${at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`
      }
      if (block.type === "thinking") {
        if (typeof block.signature !== "string")
          return `messages.${index}.content.${at}.thinking.signature: Field required`
        if (!verifyThinking(secret, typeof block.thinking === "string" ? block.thinking : "", block.signature)) {
          return `messages.${index}.content.${at}: Invalid \`signature\` in \`thinking\` block`
        }
      }
    }
    const previous = turns[index - 1]
    const offered =
      previous?.role === "assistant" ? new Set(idsOf(previous.blocks, "tool_use", "id")) : new Set<string>()
    const answered = idsOf(turn.blocks, "tool_result", "tool_use_id")
    const unexpected = answered.filter((id) => !offered.has(id))
    if (turn.role === "user" && unexpected.length > 0) {
      return `messages.${index}.content.0: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(", ")}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`
    }
    if (turn.role === "user" && offered.size > 0) {
      const missing = [...offered].filter((id) => !answered.includes(id))
      if (missing.length > 0) {
        return `messages.${index - 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`
      }
    }
  }
  const last = turns[turns.length - 1]
  const previous = turns[turns.length - 2]
  if (thinkingOn && last?.role === "user" && previous?.role === "assistant") {
    const answersTools = last.blocks.some((block) => block.type === "tool_result")
    const first = previous.blocks[0]?.type
    if (answersTools && first !== "thinking" && first !== "redacted_thinking") {
      return `messages.${turns.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`
    }
  }
  return undefined
}

const toolSpecs = (tools: ReadonlyArray<unknown>): ReadonlyArray<ToolSpec> =>
  tools.flatMap((tool) => {
    const name = stringField(tool, "name")
    return name === undefined ? [] : [{ name, schema: field(tool, "input_schema") ?? {} }]
  })

const toolMode = (choice: unknown): ToolMode => {
  switch (stringField(choice, "type")) {
    case "none":
      return { _tag: "None" }
    case "any":
      return { _tag: "Required" }
    case "tool":
      return { _tag: "Named", name: stringField(choice, "name") ?? "" }
    default:
      return { _tag: "Auto" }
  }
}

/**
 * A system prompt demanding JSON and nothing else ("Respond only with a single valid JSON object.", "Answer only in
 * JSON"): without a schema, that is how a client (or the gateway, for OpenAI's json_object) asks Claude for JSON, and a
 * real model complies.
 */
const JSON_ONLY =
  /\b(?:respond|reply|answer|output)\b[^.\n]*\bonly\b[^.\n]*\bjson\b|\bonly (?:with |in )?(?:a )?(?:single )?(?:valid )?json\b/i

/**
 * JSON outputs: `output_config.format` (generally available) or the earlier beta's top-level `output_format`, both
 * `{type: "json_schema", schema}`.
 */
const outputFormat = (body: JsonRecord): OutputFormat => {
  const format = field(field(body, "output_config"), "format") ?? field(body, "output_format")
  const schema = field(format, "schema")
  if (stringField(format, "type") === "json_schema" && isRecord(schema)) return { _tag: "JsonSchema", schema }
  return JSON_ONLY.test(contentText(field(body, "system"))) ? { _tag: "JsonObject" } : { _tag: "Text" }
}

interface Parsed {
  readonly model: string
  readonly messages: ReadonlyArray<unknown>
  readonly turns: ReadonlyArray<Turn>
  readonly body: JsonRecord
}

/** The checks shared by `/v1/messages` and `/v1/messages/count_tokens`; an error message or the parsed request. */
const parse = (request: SimRequest, context: SimContext, needsMaxTokens: boolean): string | Parsed => {
  if (request.bodyInvalid || !isRecord(request.body))
    return "There was an error parsing the body of your request as JSON."
  const body = request.body
  const model = stringField(body, "model")
  if (model === undefined) return "model: Field required"
  if (needsMaxTokens && numberField(body, "max_tokens") === undefined) return "max_tokens: Field required"
  const messages = arrayField(body, "messages")
  if (messages === undefined) return "messages: Field required"
  const thinking = field(body, "thinking")
  const thinkingType = stringField(thinking, "type")
  const thinkingOn = thinkingType === "enabled" || thinkingType === "adaptive"
  if (needsMaxTokens && thinkingType === "enabled") {
    const budget = numberField(thinking, "budget_tokens")
    if (budget === undefined) return "thinking.enabled.budget_tokens: Field required"
    if (budget < 1024) return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if (budget >= (numberField(body, "max_tokens") ?? 0))
      return "`max_tokens` must be greater than `thinking.budget_tokens`."
  }
  const choice = stringField(field(body, "tool_choice"), "type")
  if (thinkingOn && (choice === "any" || choice === "tool")) {
    return "Thinking may not be enabled when tool_choice forces tool use."
  }
  const turns = turnsOf(messages)
  const problem = validateTurns(turns, context.thinkingSecret, thinkingOn)
  return problem ?? { model, messages, turns, body }
}

const notFound = (context: SimContext, model: string): boolean =>
  context.models !== undefined && !context.models.includes(model)

const usageOf = (inputTokens: number, outputTokens: number) => ({
  input_tokens: inputTokens,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
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
export const createMessage = (request: SimRequest, context: SimContext, replyTokens: number): SimReply | AsyncReply => {
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
  return withPromptTokens(tallyAnthropicMessages({ messages, system, tools }), (inputTokens) => {
    const id = `msg_sim${suffix}`
    const content = contentOf(plan, context.thinkingSecret)
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
          usage: usageOf(inputTokens, plan.outputTokens)
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
          usage: usageOf(inputTokens, 1)
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
        usage: {
          input_tokens: inputTokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: plan.outputTokens
        }
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
