import { invalid } from "./OpenAIReplies.ts"
import { strictSchemaProblem } from "./OpenAIStrictSchema.ts"
import { arrayField, contentText, field, stringField } from "./Json.ts"
import type { PromptCache } from "./PromptCache.ts"
import type { OutputFormat, ReplyPlan, ToolMode, ToolSpec } from "./Reply.ts"
import type { SimReply } from "./SimResponse.ts"

export const toolSpecs = (tools: ReadonlyArray<unknown>): ReadonlyArray<ToolSpec> =>
  tools.flatMap((tool) => {
    const fn = field(tool, "function")
    const name = stringField(fn, "name")
    return name === undefined ? [] : [{ name, schema: field(fn, "parameters") ?? {} }]
  })

export const toolMode = (choice: unknown): ToolMode => {
  if (choice === "none") return { _tag: "None" }
  if (choice === "required") return { _tag: "Required" }
  const name = stringField(field(choice, "function"), "name")
  return name === undefined ? { _tag: "Auto" } : { _tag: "Named", name }
}

/** `response_format`: free text, JSON mode, or Structured Outputs with a schema (absent schema → any object). */
export const outputFormat = (format: unknown): OutputFormat => {
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
export const validateOutputFormat = (
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
export const validateMessages = (messages: ReadonlyArray<unknown>): SimReply | undefined => {
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

export const finishReason = (plan: ReplyPlan, forcedByName: boolean): string => {
  if (plan.finish === "tool_call") return forcedByName ? "stop" : "tool_calls"
  return plan.finish === "length" ? "length" : "stop"
}

/** `prompt_tokens` is every prompt token, cached ones included; OpenAI reports cache reads only, never writes. */
export const usageOf = (promptTokens: number, plan: ReplyPlan, cache: PromptCache) => ({
  prompt_tokens: promptTokens,
  completion_tokens: plan.outputTokens,
  total_tokens: promptTokens + plan.outputTokens,
  prompt_tokens_details: { cached_tokens: cache.read, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: plan.thinkingTokens,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0
  }
})

export const splitJson = (text: string): ReadonlyArray<string> => {
  const size = Math.max(1, Math.ceil(text.length / 3))
  const pieces: Array<string> = []
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size))
  return pieces
}

/** `POST /v1/chat/completions`. */

export const ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"])
