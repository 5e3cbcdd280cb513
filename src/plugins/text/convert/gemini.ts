/**
 * IR ↔ Gemini `generateContent`.
 *
 * Lossy cases:
 * - Gemini → IR request: `safetySettings`, `cachedContent`, `seed`, penalties, `responseModalities`, `imageConfig`,
 *   `speechConfig`, `mediaResolution`, logprobs, `thoughtSignature`s on text parts, `executableCode`/`codeExecutionResult`
 *   parts and non-function tools (`googleSearch`, `codeExecution`) are dropped; thought parts of earlier model turns
 *   are dropped unless signed (signatures on thoughts and function calls are kept, see thinkingSignature.ts);
 *   `fileData` becomes an image URL; `functionResponse.response` becomes text (`result` or `error` when it is a string,
 *   else its JSON); calls without an id get `call_<n>` and responses without an id answer the oldest open call of the
 *   same name; `thinkingConfig.thinkingLevel` becomes an effort. Rejected: `candidateCount > 1`, non-image inline
 *   data (audio, video, PDF), roles other than user/model, responses to no call.
 * - IR → Gemini request: thinking without a Gemini signature and redacted thinking are dropped (Gemini replays reasoning
 *   only through its own `thoughtSignature`s, which go back on the thought or function call they came with);
 *   http(s) image URLs are rejected (Gemini only takes inline data or Files-API URIs; the caller must fetch and inline
 *   them first); `parallelToolCalls`, `user` and JSON-object-vs-schema strictness are dropped; `json_object` becomes
 *   `responseMimeType: application/json` without a schema; effort becomes a `thinkingBudget` (`none` → 0);
 *   tool results are sent as `functionResponse.response = {result}` (or `{error}` when `isError`), images in them
 *   are dropped. Tool-call ids travel in `functionCall.id`/`functionResponse.id` (unverified against the Developer
 *   API; drop them in the adapter if the upstream rejects them).
 * - Gemini → IR response: only `candidates[0]` is read; `inlineData`, `executableCode`, `codeExecutionResult` parts and
 *   `thoughtSignature`s on text parts are dropped; function calls without an id get `call_<n>` ids; safety-style finish reasons
 *   become `refusal`, `MALFORMED_FUNCTION_CALL`-style ones `error`; a blocked prompt (no candidates) is a `refusal`.
 * - IR → Gemini response: redacted thinking and other vendors' thinking signatures are dropped.
 */
import { geminiSchemaToJsonSchema } from "./geminiSchema.ts"
import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  ChatResponse,
  Converted,
  Message,
  ReasoningConfig,
  ResponseFormat,
  StopReason,
  TextPart,
  ToolCallPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  Usage,
  UserPart
} from "./ChatIR.ts"
import { checkToolPairing, convertError } from "./ChatIR.ts"
import { asArray, asCount, asNumber, asRecord, asString, compact, isRecord, type JsonRecord, label } from "./json.ts"
import { EFFORT_BUDGETS } from "./anthropic.ts"

const FILES_API_PREFIX = "https://generativelanguage.googleapis.com/"

const REFUSAL_REASONS = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
  "LANGUAGE"
])

const ERROR_REASONS = new Set(["MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"])

export const geminiFinishToStopReason = (finish: unknown, sawToolCalls: boolean): StopReason => {
  if (finish === "MAX_TOKENS") return "max_tokens"
  if (sawToolCalls) return "tool_use"
  if (typeof finish === "string" && REFUSAL_REASONS.has(finish)) return "refusal"
  if (typeof finish === "string" && ERROR_REASONS.has(finish)) return "error"
  return "end_turn"
}

export const stopReasonToGeminiFinish = (stop: StopReason): string => {
  switch (stop) {
    case "max_tokens":
    case "model_context_window_exceeded":
      return "MAX_TOKENS"
    case "refusal":
    case "content_filter":
      return "SAFETY"
    case "error":
      return "OTHER"
    default:
      return "STOP"
  }
}

/** `promptTokenCount` includes cached tokens; `candidatesTokenCount` excludes thoughts. */
export const geminiUsageToIR = (raw: unknown): Usage => {
  const usage = asRecord(raw)
  const cached = asCount(usage.cachedContentTokenCount)
  const thoughts = asCount(usage.thoughtsTokenCount)
  const prompt = asCount(usage.promptTokenCount) + asCount(usage.toolUsePromptTokenCount)
  return {
    inputTokens: Math.max(0, prompt - cached),
    outputTokens: asCount(usage.candidatesTokenCount) + thoughts,
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
    reasoningTokens: thoughts
  }
}

export const irUsageToGemini = (usage: Usage): JsonRecord => {
  const prompt = usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens
  const thoughts = Math.min(usage.reasoningTokens, usage.outputTokens)
  return compact({
    promptTokenCount: prompt,
    candidatesTokenCount: usage.outputTokens - thoughts,
    thoughtsTokenCount: thoughts > 0 ? thoughts : undefined,
    cachedContentTokenCount: usage.cacheReadTokens > 0 ? usage.cacheReadTokens : undefined,
    totalTokenCount: prompt + usage.outputTokens
  })
}

// ---------------------------------------------------------------------------------------------------------------
// request: IR → Gemini

const toolCallToGemini = (call: ToolCallPart): JsonRecord => ({ id: call.id, name: call.name, args: call.input })

/** A function-call part, with the signature Gemini gave it (Gemini 3 refuses a replayed call without it). */
const functionCallPart = (call: ToolCallPart): JsonRecord =>
  compact({ functionCall: toolCallToGemini(call), thoughtSignature: call.signature })

/** Only Gemini's own signatures go back to Gemini; a thought part is worth nothing to it without one. */
const signedThoughtPart = (part: AssistantPart): JsonRecord | undefined =>
  part.type === "thinking" && part.signatureOrigin === "gemini" && part.signature !== undefined
    ? { text: part.text, thought: true, thoughtSignature: part.signature }
    : undefined

const thoughtSignatureOf = (part: JsonRecord): string | undefined => {
  const signature = asString(field(part, "thoughtSignature"))
  return signature === "" ? undefined : signature
}

const userPartToGemini = (part: UserPart, param: string): Converted<JsonRecord> => {
  if (part.type === "text") return Result.succeed({ text: part.text })
  if (part.source.kind === "base64") {
    return Result.succeed({ inlineData: { mimeType: part.source.mediaType, data: part.source.data } })
  }
  if (part.source.url.startsWith(FILES_API_PREFIX)) {
    return Result.succeed({ fileData: { fileUri: part.source.url } })
  }
  return convertError(param, "Gemini needs images inlined as base64; fetch the URL first")
}

const assistantPartsToGemini = (parts: ReadonlyArray<AssistantPart>): Array<JsonRecord> =>
  parts.flatMap((part): ReadonlyArray<JsonRecord> => {
    switch (part.type) {
      case "text":
        return part.text === "" ? [] : [{ text: part.text }]
      case "tool_call":
        return [functionCallPart(part)]
      case "thinking": {
        const thought = signedThoughtPart(part)
        return thought === undefined ? [] : [thought]
      }
      default:
        return []
    }
  })

const contentsToGemini = (messages: ReadonlyArray<Message>): Converted<Array<JsonRecord>> => {
  const names = new Map<string, string>()
  const contents: Array<JsonRecord> = []
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message.role === "assistant") {
      for (const part of message.content) if (part.type === "tool_call") names.set(part.id, part.name)
      const parts = assistantPartsToGemini(message.content)
      if (parts.length > 0) contents.push({ role: "model", parts })
    } else if (message.role === "user") {
      const parts: Array<JsonRecord> = []
      for (let j = 0; j < message.content.length; j++) {
        const part = userPartToGemini(message.content[j], `messages.${i}.content.${j}`)
        if (Result.isFailure(part)) return Result.fail(part.failure)
        parts.push(part.success)
      }
      contents.push({ role: "user", parts })
    } else {
      const parts = message.content.map((result) => {
        const text = result.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n")
        return {
          functionResponse: {
            id: result.toolCallId,
            name: names.get(result.toolCallId) ?? "",
            response: result.isError ? { error: text } : { result: text }
          }
        }
      })
      contents.push({ role: "user", parts })
    }
  }
  return Result.succeed(contents)
}

const thinkingConfigOf = (request: ChatRequest): JsonRecord | undefined => {
  const reasoning = request.reasoning
  if (reasoning === undefined) return undefined
  const thinking = reasoning.thinking
  if (thinking?.type === "disabled" || reasoning.effort === "none") return { thinkingBudget: 0 }
  if (thinking?.type === "enabled") return { includeThoughts: true, thinkingBudget: thinking.budgetTokens }
  if (reasoning.effort !== undefined) {
    return { includeThoughts: true, thinkingBudget: EFFORT_BUDGETS[reasoning.effort] ?? EFFORT_BUDGETS.medium }
  }
  // adaptive: let the model decide (-1 = dynamic budget).
  return { includeThoughts: true, thinkingBudget: -1 }
}

const toolConfigOf = (request: ChatRequest): JsonRecord | undefined => {
  const choice = request.toolChoice
  if (choice === undefined) return undefined
  switch (choice.type) {
    case "auto":
      return { functionCallingConfig: { mode: "AUTO" } }
    case "none":
      return { functionCallingConfig: { mode: "NONE" } }
    case "any":
      return { functionCallingConfig: { mode: "ANY" } }
    case "tool":
      return { functionCallingConfig: { mode: "ANY", allowedFunctionNames: [choice.name] } }
  }
}

export const irToGeminiRequest = (request: ChatRequest): Converted<JsonRecord> => {
  const contents = contentsToGemini(request.messages)
  if (Result.isFailure(contents)) return Result.fail(contents.failure)
  const format = request.responseFormat
  const generationConfig = compact({
    temperature: request.temperature,
    topP: request.topP,
    topK: request.topK,
    maxOutputTokens: request.maxTokens,
    stopSequences: request.stop,
    responseMimeType: format?.type === "json_schema" || format?.type === "json_object" ? "application/json" : undefined,
    responseJsonSchema: format?.type === "json_schema" ? format.schema : undefined,
    thinkingConfig: thinkingConfigOf(request)
  })
  return Result.succeed(
    compact({
      systemInstruction:
        request.system.length > 0 ? { parts: request.system.map((p) => ({ text: p.text })) } : undefined,
      contents: contents.success,
      tools:
        request.tools.length > 0
          ? [
              {
                functionDeclarations: request.tools.map((t) =>
                  compact({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })
                )
              }
            ]
          : undefined,
      toolConfig: request.tools.length === 0 ? undefined : toolConfigOf(request),
      generationConfig: Object.keys(generationConfig).length > 0 ? generationConfig : undefined
    })
  )
}

// ---------------------------------------------------------------------------------------------------------------
// request: Gemini → IR

/** Google's JSON parser accepts proto field names in snake_case too. */
const field = (record: JsonRecord, camel: string): unknown => {
  if (record[camel] !== undefined) return record[camel]
  return record[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]
}

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

const contentsToIR = (raw: unknown): Converted<Array<Message>> => {
  const messages: Array<Message> = []
  const open = new Map<string, Array<string>>()
  let callIndex = 0
  const contents = asArray(raw)
  for (let i = 0; i < contents.length; i++) {
    const content = asRecord(contents[i])
    const parts = asArray(content.parts)
    const role = content.role ?? "user"
    if (role === "model") {
      const out: Array<AssistantPart> = []
      for (const rawPart of parts) {
        const part = asRecord(rawPart)
        const call = field(part, "functionCall")
        if (isRecord(call)) {
          const name = asString(call.name) ?? ""
          const id = asString(call.id) ?? `call_${callIndex}`
          callIndex++
          open.set(name, [...(open.get(name) ?? []), id])
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
      messages.push({ role: "assistant", content: out })
      continue
    }
    if (role !== "user") return convertError(`contents.${i}.role`, `unsupported role '${label(role)}'`)
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
        const name = asString(response.name) ?? ""
        const pending = open.get(name) ?? []
        const id = asString(response.id) ?? pending[0]
        if (id === undefined) return convertError(at, `function response '${name}' answers no function call`)
        open.set(
          name,
          pending.filter((p) => p !== id)
        )
        const { text, isError } = functionResponseText(asRecord(response.response))
        results.push({ type: "tool_result", toolCallId: id, content: [{ type: "text", text }], isError })
      }
    }
    if (results.length > 0) messages.push({ role: "tool", content: results })
    if (userParts.length > 0 || results.length === 0) messages.push({ role: "user", content: userParts })
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
      stream: context.stream
    })
  )
}

// ---------------------------------------------------------------------------------------------------------------
// response: Gemini → IR and IR → Gemini

/** Gemini parts → IR parts; `nextCallIndex` numbers calls without an id so the ids are stable within one response. */
export const geminiPartsToIR = (
  rawParts: unknown,
  nextCallIndex: number
): { parts: Array<AssistantPart>; nextCallIndex: number } => {
  const parts: Array<AssistantPart> = []
  let callIndex = nextCallIndex
  for (const raw of asArray(rawParts)) {
    const part = asRecord(raw)
    const text = asString(part.text)
    const signature = thoughtSignatureOf(part)
    if (isRecord(part.functionCall)) {
      const call = part.functionCall
      parts.push(
        compact({
          type: "tool_call" as const,
          id: asString(call.id) ?? `call_${callIndex}`,
          name: asString(call.name) ?? "",
          input: asRecord(call.args),
          signature
        })
      )
      callIndex++
    } else if (text !== undefined && part.thought === true) {
      parts.push(
        signature === undefined
          ? { type: "thinking", text }
          : { type: "thinking", text, signature, signatureOrigin: "gemini" }
      )
    } else if (text !== undefined) {
      parts.push({ type: "text", text })
    }
  }
  return { parts, nextCallIndex: callIndex }
}

export interface GeminiResponseOptions {
  /** Used when the body has no `responseId`. */
  readonly fallbackId: string
  /** Used when the body has no `modelVersion`. */
  readonly fallbackModel: string
}

export const geminiResponseToIR = (body: unknown, options: GeminiResponseOptions): Converted<ChatResponse> => {
  if (!isRecord(body)) return convertError("", "response body must be a JSON object")
  const candidate = asArray(body.candidates)[0]
  const { parts } = geminiPartsToIR(asRecord(asRecord(candidate).content).parts, 0)
  const sawToolCalls = parts.some((p) => p.type === "tool_call")
  return Result.succeed({
    id: asString(body.responseId) ?? options.fallbackId,
    model: asString(body.modelVersion) ?? options.fallbackModel,
    content: parts,
    stopReason: isRecord(candidate) ? geminiFinishToStopReason(candidate.finishReason, sawToolCalls) : "refusal",
    usage: geminiUsageToIR(body.usageMetadata)
  })
}

const irPartToGemini = (part: AssistantPart): JsonRecord | undefined => {
  switch (part.type) {
    case "text":
      return { text: part.text }
    case "thinking":
      return signedThoughtPart(part) ?? { text: part.text, thought: true }
    case "tool_call":
      return functionCallPart(part)
    case "redacted_thinking":
      return undefined
  }
}

export const irToGeminiResponse = (response: ChatResponse): JsonRecord => ({
  candidates: [
    {
      content: {
        role: "model",
        parts: response.content.flatMap((p) => {
          const part = irPartToGemini(p)
          return part === undefined ? [] : [part]
        })
      },
      finishReason: stopReasonToGeminiFinish(response.stopReason),
      index: 0
    }
  ],
  usageMetadata: irUsageToGemini(response.usage),
  modelVersion: response.model,
  responseId: response.id
})
