/**
 * Reading a Responses API request (`POST /v1/responses`) as OpenAI does: the checks it makes with its words, the
 * request's input items seen as the simulated model sees them, and the opaque `encrypted_content` of reasoning items.
 */
import { invalid } from "./OpenAIReplies.ts"
import { strictSchemaProblem } from "./OpenAIStrictSchema.ts"
import { arrayField, contentText, field, isRecord, type JsonRecord, numberField, stringField } from "./Json.ts"
import type { OutputFormat, ToolMode, ToolSpec } from "./Reply.ts"
import type { SimReply } from "./SimResponse.ts"
import { signThinking, verifyThinking } from "./ThinkingSignature.ts"

export interface ResponsesRequest {
  readonly body: JsonRecord
  readonly model: string
  /** `input` as items (a string input is one user message). */
  readonly items: ReadonlyArray<JsonRecord>
  readonly tools: ReadonlyArray<unknown>
}

const ROLES = ["assistant", "system", "developer", "user"]
/**
 * Item types the API accepts. The simulator reads the first four, counts the others' JSON as input, and refuses
 * `item_reference` (it keeps no items between requests).
 */
const ITEM_TYPES = [
  "message function_call function_call_output reasoning item_reference file_search_call computer_call",
  "computer_call_output web_search_call image_generation_call code_interpreter_call local_shell_call",
  "local_shell_call_output shell_call shell_call_output apply_patch_call apply_patch_call_output mcp_list_tools",
  "mcp_approval_request mcp_approval_response mcp_call custom_tool_call custom_tool_call_output"
].flatMap((line) => line.split(" "))
const USER_PARTS = ["input_text", "input_image", "input_file"]
const ASSISTANT_PARTS = ["output_text", "refusal"]
const EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh"]
/** Chat Completions parameters the Responses API refuses, naming where each went. */
const MOVED: ReadonlyArray<readonly [string, string]> = [
  ["messages", "input"],
  ["response_format", "text.format"],
  ["max_tokens", "max_output_tokens"],
  ["max_completion_tokens", "max_output_tokens"],
  ["reasoning_effort", "reasoning.effort"]
]

/** OpenAI's list wording: `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`. */
const listed = (values: ReadonlyArray<string>): string => {
  const quoted = values.map((value) => `'${value}'`)
  if (quoted.length <= 2) return quoted.join(" and ")
  return `${quoted.slice(0, -1).join(", ")}, and ${quoted[quoted.length - 1]}`
}

const missing = (param: string): SimReply =>
  invalid(`Missing required parameter: '${param}'.`, param, "missing_required_parameter")

const badValue = (value: unknown, supported: ReadonlyArray<string>, param: string): SimReply =>
  invalid(`Invalid value: '${String(value)}'. Supported values are: ${listed(supported)}.`, param, "invalid_value")

/**
 * A reasoning item's `encrypted_content`: opaque to clients, it carries the reasoning text bound by the simulator's
 * signature, so reasoning handed back edited, or built by someone else, is refused as the real API refuses it.
 */
export const sealReasoning = (secret: string, thinking: string): string =>
  Buffer.from(`${signThinking(secret, thinking)}\n${thinking}`, "utf8").toString("base64")

/** The reasoning text sealed in `encrypted_content`, or undefined when the simulator did not seal it. */
export const openReasoning = (secret: string, sealed: string): string | undefined => {
  const text = Buffer.from(sealed, "base64").toString("utf8")
  const cut = text.indexOf("\n")
  if (cut < 0) return undefined
  const thinking = text.slice(cut + 1)
  return verifyThinking(secret, thinking, text.slice(0, cut)) ? thinking : undefined
}

export const summaryText = (item: unknown): string => contentText(arrayField(item, "summary") ?? [])

export const itemType = (item: JsonRecord): string => stringField(item, "type") ?? "message"

const isOutputItem = (item: JsonRecord | undefined): boolean =>
  item !== undefined &&
  (itemType(item) === "message" ? stringField(item, "role") === "assistant" : itemType(item).endsWith("_call"))

const validateContent = (content: unknown, role: string, at: string): SimReply | undefined => {
  if (typeof content === "string") return undefined
  if (!Array.isArray(content)) return missing(`${at}.content`)
  const allowed = role === "assistant" ? ASSISTANT_PARTS : USER_PARTS
  for (const [index, part] of content.entries()) {
    const type = stringField(part, "type")
    if (type === undefined || !allowed.includes(type)) return badValue(type, allowed, `${at}.content[${index}]`)
  }
  return undefined
}

/** One item's own fields; undefined when it is well-formed. */
const validateItem = (item: JsonRecord, at: string): SimReply | undefined => {
  const type = itemType(item)
  if (!ITEM_TYPES.includes(type)) return badValue(type, ITEM_TYPES, `${at}.type`)
  const required: Readonly<Record<string, ReadonlyArray<string>>> = {
    message: ["role", "content"],
    function_call: ["call_id", "name", "arguments"],
    function_call_output: ["call_id", "output"],
    reasoning: ["summary"]
  }
  const absent = (required[type] ?? []).find((key) => item[key] === undefined || item[key] === null)
  if (absent !== undefined) return missing(`${at}.${absent}`)
  if (type === "message") {
    const role = item.role
    if (typeof role !== "string" || !ROLES.includes(role)) return badValue(role, ROLES, `${at}.role`)
    return validateContent(item.content, role, at)
  }
  if (type === "item_reference") {
    // The simulator keeps nothing between requests, so no item can be referred to.
    return invalid(`Item with id '${stringField(item, "id") ?? ""}' not found.`, "input")
  }
  return undefined
}

/** The conversation's rules: every function call is answered after it, every reasoning item has its output. */
const validateItems = (items: ReadonlyArray<JsonRecord>, secret: string): SimReply | undefined => {
  const pending = new Set<string>()
  for (const [index, item] of items.entries()) {
    const problem = validateItem(item, `input[${index}]`)
    if (problem !== undefined) return problem
    const type = itemType(item)
    const callId = stringField(item, "call_id") ?? ""
    if (type === "function_call") pending.add(callId)
    if (type === "function_call_output") {
      if (!pending.has(callId)) {
        return invalid(`No tool call found for function call output with call_id ${callId}.`, "input")
      }
      pending.delete(callId)
    }
    if (type === "reasoning") {
      const id = stringField(item, "id") ?? ""
      const sealed = stringField(item, "encrypted_content")
      if (sealed !== undefined && openReasoning(secret, sealed) === undefined) {
        return invalid(`The encrypted content for item ${id} could not be verified.`, null, "invalid_encrypted_content")
      }
      if (!isOutputItem(items[index + 1])) {
        return invalid(`Item '${id}' of type 'reasoning' was provided without its required following item.`, "input")
      }
    }
  }
  const [unanswered] = pending
  return unanswered === undefined
    ? undefined
    : invalid(`No tool output found for function call ${unanswered}.`, "input")
}

/** Function tools need a name; one sent with `strict: true` must have a strict schema. */
const validateTools = (tools: ReadonlyArray<unknown>): SimReply | undefined => {
  for (const [index, tool] of tools.entries()) {
    if (stringField(tool, "type") === undefined) return missing(`tools[${index}].type`)
    if (stringField(tool, "type") !== "function") continue
    const name = stringField(tool, "name")
    if (name === undefined) return missing(`tools[${index}].name`)
    if (field(tool, "strict") !== true) continue
    const problem = strictSchemaProblem(field(tool, "parameters") ?? { type: "object", properties: {} })
    if (problem !== undefined) {
      return invalid(
        `Invalid schema for function '${name}': ${problem}`,
        `tools[${index}].parameters`,
        "invalid_function_parameters"
      )
    }
  }
  return undefined
}

const mentionsJson = (body: JsonRecord, items: ReadonlyArray<JsonRecord>): boolean =>
  /json/i.test(stringField(body, "instructions") ?? "") ||
  items.some((item) => /json/i.test(contentText(field(item, "content"))))

const validateFormat = (body: JsonRecord, items: ReadonlyArray<JsonRecord>): SimReply | undefined => {
  const format = field(field(body, "text"), "format")
  const type = stringField(format, "type")
  if (type === "json_schema") {
    const name = stringField(format, "name")
    if (name === undefined) return missing("text.format.name")
    if (!isRecord(field(format, "schema"))) return missing("text.format.schema")
    const problem = field(format, "strict") === true ? strictSchemaProblem(field(format, "schema")) : undefined
    if (problem !== undefined) {
      return invalid(
        `Invalid schema for response_format '${name}': ${problem}`,
        "text.format.schema",
        "invalid_json_schema"
      )
    }
  }
  if (type === "json_object" && !mentionsJson(body, items)) {
    return invalid(
      "Response input messages must contain the word 'json' in some form to use 'text.format' of type 'json_object'.",
      "input"
    )
  }
  return undefined
}

/** The request, or the 400 OpenAI answers it with. */
export const readResponsesRequest = (body: JsonRecord, secret: string): ResponsesRequest | SimReply => {
  for (const [old, moved] of MOVED) {
    if (body[old] !== undefined) {
      return invalid(
        `Unsupported parameter: '${old}'. In the Responses API, this parameter has moved to '${moved}'. Try again with the new parameter. See the API documentation for more information: https://platform.openai.com/docs/api-reference/responses/create.`,
        old,
        "unsupported_parameter"
      )
    }
  }
  const model = stringField(body, "model")
  if (model === undefined) return missing("model")
  const input = body.input
  if (input === undefined || input === null) return missing("input")
  if (typeof input !== "string" && !Array.isArray(input)) {
    return invalid(
      `Invalid type for 'input': expected one of a string or array of input items, but got ${typeof input} instead.`,
      "input",
      "invalid_type"
    )
  }
  const previous = stringField(body, "previous_response_id")
  if (previous !== undefined) {
    // Nothing is stored between requests.
    return invalid(
      `Previous response with id '${previous}' not found.`,
      "previous_response_id",
      "previous_response_not_found"
    )
  }
  const maxOutput = body.max_output_tokens
  if (maxOutput !== undefined && maxOutput !== null) {
    if (typeof maxOutput !== "number" || !Number.isInteger(maxOutput)) {
      return invalid(
        `Invalid type for 'max_output_tokens': expected an integer, but got ${typeof maxOutput} instead.`,
        "max_output_tokens",
        "invalid_type"
      )
    }
    if (maxOutput < 16) {
      return invalid(
        `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got ${maxOutput} instead.`,
        "max_output_tokens",
        "integer_below_min_value"
      )
    }
  }
  const effort = field(field(body, "reasoning"), "effort")
  if (effort !== undefined && effort !== null && !EFFORTS.includes(String(effort))) {
    return badValue(effort, EFFORTS, "reasoning.effort")
  }
  const items: Array<JsonRecord> = []
  if (typeof input === "string") items.push({ type: "message", role: "user", content: input })
  for (const [index, item] of (Array.isArray(input) ? input : []).entries()) {
    if (!isRecord(item)) {
      return invalid(
        `Invalid type for 'input[${index}]': expected an input item, but got ${typeof item} instead.`,
        `input[${index}]`,
        "invalid_type"
      )
    }
    items.push(item)
  }
  const tools = arrayField(body, "tools") ?? []
  return (
    validateItems(items, secret) ?? validateTools(tools) ?? validateFormat(body, items) ?? { body, model, items, tools }
  )
}

export const toolSpecs = (tools: ReadonlyArray<unknown>): ReadonlyArray<ToolSpec> =>
  tools.flatMap((tool) => {
    const name = stringField(tool, "name")
    return stringField(tool, "type") !== "function" || name === undefined
      ? []
      : [{ name, schema: field(tool, "parameters") ?? {} }]
  })

/** `tool_choice`: `none`, `auto`, `required`, `{type: "function", name}` (an `allowed_tools` choice keeps its mode). */
export const toolMode = (choice: unknown): ToolMode => {
  const mode = typeof choice === "string" ? choice : stringField(choice, "mode")
  if (mode === "none") return { _tag: "None" }
  if (mode === "required") return { _tag: "Required" }
  const name = stringField(choice, "type") === "function" ? stringField(choice, "name") : undefined
  return name === undefined ? { _tag: "Auto" } : { _tag: "Named", name }
}

/** `text.format`: free text, JSON mode, or Structured Outputs with a schema at the format's top level. */
export const outputFormat = (body: JsonRecord): OutputFormat => {
  const format = field(field(body, "text"), "format")
  switch (stringField(format, "type")) {
    case "json_object":
      return { _tag: "JsonObject" }
    case "json_schema":
      return { _tag: "JsonSchema", schema: field(format, "schema") }
    default:
      return { _tag: "Text" }
  }
}

/** Reasoning is on when asked for with an effort above `minimal` (`medium` when the effort is left out). */
export const reasoningOn = (body: JsonRecord): boolean => {
  const reasoning = field(body, "reasoning")
  const effort = stringField(reasoning, "effort") ?? "medium"
  return isRecord(reasoning) && effort !== "none" && effort !== "minimal"
}

export const maxOutputTokens = (body: JsonRecord): number | undefined => numberField(body, "max_output_tokens")
