import { anthropicError } from "./ErrorEnvelopes.ts"
import { arrayField, contentText, field, isRecord, type JsonRecord, numberField, stringField } from "./Json.ts"
import type { OutputFormat, ToolMode, ToolSpec } from "./Reply.ts"
import { header, json, type SimContext, type SimReply, type SimRequest } from "./SimResponse.ts"
import { verifyThinking } from "./ThinkingSignature.ts"

interface Turn {
  readonly role: string
  readonly blocks: ReadonlyArray<JsonRecord>
}

export const fail = (status: number, message: string, requestId: string): SimReply =>
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

export const toolSpecs = (tools: ReadonlyArray<unknown>): ReadonlyArray<ToolSpec> =>
  tools.flatMap((tool) => {
    const name = stringField(tool, "name")
    // A versioned tool (`web_search_20250305`, …) is Anthropic's own, not one the model calls for the client.
    const type = stringField(tool, "type")
    return name === undefined || (type !== undefined && type !== "custom")
      ? []
      : [{ name, schema: field(tool, "input_schema") ?? {} }]
  })

export const toolMode = (choice: unknown): ToolMode => {
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
export const outputFormat = (body: JsonRecord): OutputFormat => {
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
export const parse = (request: SimRequest, context: SimContext, needsMaxTokens: boolean): string | Parsed => {
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

export const notFound = (context: SimContext, model: string): boolean =>
  context.models !== undefined && !context.models.includes(model)

export const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/
