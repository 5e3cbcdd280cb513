import { Result } from "effect"
import type { AssistantPart, ChatResponse, Converted } from "./ChatIR.ts"
import { convertError } from "./ChatIR.ts"
import { asArray, asRecord, asString, compact, isRecord, type JsonRecord } from "./json.ts"
import {
  functionCallPart,
  geminiFinishToStopReason,
  geminiUsageToIR,
  irUsageToGemini,
  signedThoughtPart,
  stopReasonToGeminiFinish,
  thoughtSignatureOf
} from "./gemini.ts"
import { addGrounding, emptyGrounding, webSearchesOf, withSearches } from "./geminiWebSearch.ts"

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
  const id = asString(body.responseId) ?? options.fallbackId
  const grounding = addGrounding(emptyGrounding, candidate)
  const searches = webSearchesOf(grounding, id)
  return Result.succeed({
    id,
    model: asString(body.modelVersion) ?? options.fallbackModel,
    content: parts,
    ...(searches.length > 0 ? { webSearches: searches } : {}),
    stopReason: isRecord(candidate) ? geminiFinishToStopReason(candidate.finishReason, sawToolCalls) : "refusal",
    usage: withSearches(geminiUsageToIR(body.usageMetadata), grounding)
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
