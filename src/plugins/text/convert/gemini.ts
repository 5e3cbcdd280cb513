import { Result } from "effect"
import type {
  AssistantPart,
  ChatRequest,
  Converted,
  Message,
  StopReason,
  ToolCallPart,
  Usage,
  UserPart
} from "./ChatIR.ts"
import { convertError } from "./ChatIR.ts"
import { asCount, asRecord, asString, compact, type JsonRecord } from "./json.ts"
import { EFFORT_BUDGETS } from "./anthropic.ts"
import { GOOGLE_SEARCH_TOOL, geminiRunsWebSearch } from "./geminiWebSearch.ts"

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
export const functionCallPart = (call: ToolCallPart): JsonRecord =>
  compact({ functionCall: toolCallToGemini(call), thoughtSignature: call.signature })

/** Only Gemini's own signatures go back to Gemini; a thought part is worth nothing to it without one. */
export const signedThoughtPart = (part: AssistantPart): JsonRecord | undefined =>
  part.type === "thinking" && part.signatureOrigin === "gemini" && part.signature !== undefined
    ? { text: part.text, thought: true, thoughtSignature: part.signature }
    : undefined

export const thoughtSignatureOf = (part: JsonRecord): string | undefined => {
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
  const tools: Array<JsonRecord> =
    request.tools.length > 0
      ? [
          {
            functionDeclarations: request.tools.map((t) =>
              compact({ name: t.name, description: t.description, parametersJsonSchema: t.parameters })
            )
          }
        ]
      : []
  // A hosted web search asked for in another protocol runs as Google Search grounding (geminiWebSearch.ts).
  if (geminiRunsWebSearch(request)) tools.push(GOOGLE_SEARCH_TOOL)
  return Result.succeed(
    compact({
      systemInstruction:
        request.system.length > 0 ? { parts: request.system.map((p) => ({ text: p.text })) } : undefined,
      contents: contents.success,
      tools: tools.length > 0 ? tools : undefined,
      toolConfig: request.tools.length === 0 ? undefined : toolConfigOf(request),
      generationConfig: Object.keys(generationConfig).length > 0 ? generationConfig : undefined,
      cachedContent: request.cachedContent
    })
  )
}

/** Google's JSON parser accepts proto field names in snake_case too. */
export const field = (record: JsonRecord, camel: string): unknown => {
  if (record[camel] !== undefined) return record[camel]
  return record[camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]
}
