/** A Gemini generateContent request in the chat IR: contents, system instruction, tools, generation config. */
import { geminiSchemaToJsonSchema } from "./geminiSchema.ts"
import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  Message,
  ReasoningConfig,
  ResponseFormat,
  TextPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  UserPart
} from "./ChatIR.ts"
import { checkToolPairing, convertError } from "./ChatIR.ts"
import { asArray, asNumber, asRecord, asString, compact, isRecord, type JsonRecord, label } from "./json.ts"
import { thoughtSignatureOf } from "./gemini.ts"
import { field } from "./gemini.ts"

// ---------------------------------------------------------------------------------------------------------------
// request: Gemini → IR

export interface GeminiRequestContext {
  /** The model from the URL path (`/v1beta/models/{model}:generateContent`). */
  readonly model: string
  /** True for `streamGenerateContent`. */
  readonly stream: boolean
}

const functionResponseText = (response: JsonRecord): { text: string; isError: boolean } => {
  if (typeof response.error === "string") return { text: response.error, isError: true }
  if (typeof response.result === "string") return { text: response.result, isError: false }
  return { text: JSON.stringify(response), isError: response.error !== undefined }
}

/**
 * The function calls of the conversation so far: ids still waiting for an answer, by function name (Gemini's answers
 * may name the function only), the ids answered, and the next id to give a call that carries none.
 */
interface Calls {
  readonly open: Map<string, Array<string>>
  // Gemini takes a call answered more than once (Gemini CLI resends a session's last answer when it resumes one);
  // every other protocol refuses it, so a call keeps its first answer.
  readonly answered: Set<string>
  next: number
}

/** A `model` turn: its calls (opened in `calls`), its text, its signed thoughts. */
const modelTurn = (parts: ReadonlyArray<unknown>, calls: Calls): Message => {
  const out: Array<AssistantPart> = []
  for (const rawPart of parts) {
    const part = asRecord(rawPart)
    const call = field(part, "functionCall")
    if (isRecord(call)) {
      const name = asString(call.name) ?? ""
      const id = asString(call.id) ?? `call_${calls.next}`
      calls.next++
      calls.open.set(name, [...(calls.open.get(name) ?? []), id])
      const signature = thoughtSignatureOf(part)
      out.push(compact({ type: "tool_call" as const, id, name, input: asRecord(call.args), signature }))
    } else if (typeof part.text === "string" && part.thought !== true) out.push({ type: "text", text: part.text })
    else if (typeof part.text === "string" && thoughtSignatureOf(part) !== undefined) {
      out.push({
        type: "thinking",
        text: part.text,
        signature: thoughtSignatureOf(part) as string,
        signatureOrigin: "gemini"
      })
    }
  }
  return { role: "assistant", content: out }
}

/** A function's answer as a tool result for the call it answers; undefined when that call was answered already. */
const functionAnswer = (response: JsonRecord, at: string, calls: Calls): Converted<ToolResultPart | undefined> => {
  const name = asString(response.name) ?? ""
  const pending = calls.open.get(name) ?? []
  const id = asString(response.id) ?? pending[0]
  if (id === undefined) return convertError(at, `function response '${name}' answers no function call`)
  if (calls.answered.has(id)) return Result.succeed(undefined)
  calls.answered.add(id)
  calls.open.set(
    name,
    pending.filter((p) => p !== id)
  )
  const { text, isError } = functionResponseText(asRecord(response.response))
  return Result.succeed({ type: "tool_result", toolCallId: id, content: [{ type: "text", text }], isError })
}

/** A `user` turn: its function answers as a tool message, then the rest (text, images) as a user message. */
const userTurn = (parts: ReadonlyArray<unknown>, i: number, calls: Calls): Converted<ReadonlyArray<Message>> => {
  const results: Array<ToolResultPart> = []
  const userParts: Array<UserPart> = []
  for (let j = 0; j < parts.length; j++) {
    const part = asRecord(parts[j])
    const at = `contents.${i}.parts.${j}`
    const inline = asRecord(field(part, "inlineData"))
    const file = asRecord(field(part, "fileData"))
    const fileUri = asString(field(file, "fileUri"))
    const response = field(part, "functionResponse")
    if (typeof part.text === "string") userParts.push({ type: "text", text: part.text })
    else if (typeof inline.data === "string") {
      const mediaType = asString(field(inline, "mimeType")) ?? ""
      if (!mediaType.startsWith("image/"))
        return convertError(at, `inline '${mediaType}' data is not supported by the selected upstream`)
      userParts.push({ type: "image", source: { kind: "base64", mediaType, data: inline.data } })
    } else if (fileUri !== undefined) {
      userParts.push({ type: "image", source: { kind: "url", url: fileUri } })
    } else if (isRecord(response)) {
      const answer = functionAnswer(response, at, calls)
      if (Result.isFailure(answer)) return Result.fail(answer.failure)
      if (answer.success !== undefined) results.push(answer.success)
    }
  }
  const messages: Array<Message> = []
  if (results.length > 0) messages.push({ role: "tool", content: results })
  if (userParts.length > 0 || results.length === 0) messages.push({ role: "user", content: userParts })
  return Result.succeed(messages)
}

const contentsToIR = (raw: unknown): Converted<Array<Message>> => {
  const messages: Array<Message> = []
  const calls: Calls = { open: new Map(), answered: new Set(), next: 0 }
  const contents = asArray(raw)
  for (let i = 0; i < contents.length; i++) {
    const content = asRecord(contents[i])
    const parts = asArray(content.parts)
    const role = content.role ?? "user"
    if (role === "model") {
      messages.push(modelTurn(parts, calls))
      continue
    }
    if (role !== "user") return convertError(`contents.${i}.role`, `unsupported role '${label(role)}'`)
    const turn = userTurn(parts, i, calls)
    if (Result.isFailure(turn)) return Result.fail(turn.failure)
    messages.push(...turn.success)
  }
  return Result.succeed(messages)
}

const toolChoiceFromGemini = (raw: unknown): ToolChoice | undefined => {
  const config = asRecord(field(asRecord(raw), "functionCallingConfig"))
  const allowed = asArray(field(config, "allowedFunctionNames")).filter((n): n is string => typeof n === "string")
  switch (config.mode) {
    case "AUTO":
    case "VALIDATED":
      return { type: "auto" }
    case "NONE":
      return { type: "none" }
    case "ANY":
      return allowed.length === 1 ? { type: "tool", name: allowed[0] } : { type: "any" }
    default:
      return undefined
  }
}

const reasoningFromGemini = (raw: unknown): ReasoningConfig | undefined => {
  if (!isRecord(raw)) return undefined
  const budget = asNumber(field(raw, "thinkingBudget"))
  const level = asString(field(raw, "thinkingLevel"))
  if (budget === 0) return { thinking: { type: "disabled" } }
  if (budget === -1) return { thinking: { type: "adaptive" } }
  if (budget !== undefined) return { thinking: { type: "enabled", budgetTokens: budget } }
  return level === undefined ? undefined : { effort: level.toLowerCase() }
}

export const geminiRequestToIR = (body: unknown, context: GeminiRequestContext): Converted<ChatRequest> => {
  if (!isRecord(body)) return convertError("", "request body must be a JSON object")
  const config = asRecord(field(body, "generationConfig"))
  const candidates = asNumber(field(config, "candidateCount"))
  if (candidates !== undefined && candidates > 1) {
    return convertError(
      "generationConfig.candidateCount",
      "candidateCount > 1 is not supported by the selected upstream"
    )
  }
  const messages = contentsToIR(body.contents)
  if (Result.isFailure(messages)) return Result.fail(messages.failure)
  const pairing = checkToolPairing(messages.success, () => "contents")
  if (Result.isFailure(pairing)) return Result.fail(pairing.failure)
  const system = asArray(asRecord(field(body, "systemInstruction")).parts).flatMap((p): Array<TextPart> => {
    const text = asRecord(p).text
    return typeof text === "string" ? [{ type: "text", text }] : []
  })
  const tools = asArray(body.tools).flatMap((t) =>
    asArray(field(asRecord(t), "functionDeclarations")).map((d): ToolDefinition => {
      const declaration = asRecord(d)
      const jsonSchema = field(declaration, "parametersJsonSchema")
      const schema = isRecord(jsonSchema)
        ? jsonSchema
        : isRecord(declaration.parameters)
          ? geminiSchemaToJsonSchema(declaration.parameters)
          : undefined
      return compact({
        name: asString(declaration.name) ?? "",
        description: asString(declaration.description),
        parameters: schema ?? { type: "object", properties: {} }
      })
    })
  )
  const json = field(config, "responseMimeType") === "application/json"
  const jsonSchema = field(config, "responseJsonSchema")
  const openApiSchema = field(config, "responseSchema")
  const schema = isRecord(jsonSchema)
    ? jsonSchema
    : isRecord(openApiSchema)
      ? geminiSchemaToJsonSchema(openApiSchema)
      : undefined
  const responseFormat: ResponseFormat | undefined = !json
    ? undefined
    : schema !== undefined
      ? { type: "json_schema", schema }
      : { type: "json_object" }
  const stop = asArray(field(config, "stopSequences")).filter((s): s is string => typeof s === "string")
  return Result.succeed(
    compact({
      model: context.model,
      system,
      messages: messages.success,
      tools,
      toolChoice: toolChoiceFromGemini(field(body, "toolConfig")),
      maxTokens: asNumber(field(config, "maxOutputTokens")),
      stop: stop.length > 0 ? stop : undefined,
      temperature: asNumber(config.temperature),
      topP: asNumber(field(config, "topP")),
      topK: asNumber(field(config, "topK")),
      responseFormat,
      reasoning: reasoningFromGemini(field(config, "thinkingConfig")),
      stream: context.stream,
      cachedContent: asString(field(body, "cachedContent"))
    })
  )
}
