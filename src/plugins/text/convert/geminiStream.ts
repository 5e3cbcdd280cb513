/**
 * Gemini `streamGenerateContent?alt=sse` chunks ↔ streaming IR.
 *
 * Lossy cases:
 * - Parser: only `candidates[0]` is read; its Google Search grounding (geminiWebSearch.ts), which comes on the final
 *   chunk or chunks, becomes `web_search` events at the end, after the answer's blocks; `inlineData`, code-execution parts and a `thoughtSignature` on a text part
 *   are dropped (one on a thought or a function call is kept, see thinkingSignature.ts); the
 *   stream only ends at upstream EOF (Gemini has no terminator), so `end()` must be called. A function call arrives
 *   whole and becomes one tool block with one input delta.
 * - Encoder: thinking signatures and redacted thinking are dropped (a function call's own Gemini signature is kept);
 *   tool arguments are buffered until the block ends
 *   because Gemini sends a function call as a whole object (arguments that are not a JSON object become `{}`);
 *   the last chunk carries `finishReason` and `usageMetadata`.
 */
import type { Usage } from "./ChatIR.ts"
import { emptyUsage } from "./ChatIR.ts"
import {
  type ErrorKind,
  type Fallback,
  makeSequencer,
  sseData,
  type StreamEncoder,
  type StreamParser,
  type UpstreamEvent
} from "./ChatStream.ts"
import { geminiFinishToStopReason, geminiUsageToIR, irUsageToGemini, stopReasonToGeminiFinish } from "./gemini.ts"
import { geminiPartsToIR } from "./geminiResponse.ts"
import { addGrounding, emptyGrounding, webSearchesOf, withSearches } from "./geminiWebSearch.ts"
import { asArray, asRecord, asString, isRecord, type JsonRecord, parseJsonObject } from "./json.ts"

const GEMINI_ERROR_KINDS: Readonly<Record<string, ErrorKind>> = {
  INVALID_ARGUMENT: "invalid_request",
  FAILED_PRECONDITION: "invalid_request",
  OUT_OF_RANGE: "invalid_request",
  UNAUTHENTICATED: "authentication",
  PERMISSION_DENIED: "permission",
  NOT_FOUND: "not_found",
  RESOURCE_EXHAUSTED: "rate_limit",
  UNAVAILABLE: "overloaded",
  DEADLINE_EXCEEDED: "timeout",
  INTERNAL: "api_error"
}

export const geminiErrorKind = (status: unknown): ErrorKind =>
  (typeof status === "string" ? GEMINI_ERROR_KINDS[status] : undefined) ?? "api_error"

const GEMINI_ERROR_STATUS: Readonly<Record<ErrorKind, readonly [number, string]>> = {
  invalid_request: [400, "INVALID_ARGUMENT"],
  authentication: [401, "UNAUTHENTICATED"],
  permission: [403, "PERMISSION_DENIED"],
  not_found: [404, "NOT_FOUND"],
  rate_limit: [429, "RESOURCE_EXHAUSTED"],
  billing: [429, "RESOURCE_EXHAUSTED"],
  overloaded: [503, "UNAVAILABLE"],
  timeout: [504, "DEADLINE_EXCEEDED"],
  api_error: [500, "INTERNAL"]
}

export const makeGeminiStreamParser = (fallback: Fallback): StreamParser => {
  const seq = makeSequencer(fallback)
  let usage: Usage | undefined
  let finishReason: unknown
  let sawToolCalls = false
  let callIndex = 0
  let responseId = fallback.id
  /** Google Search grounding seen so far (it comes on the final chunk or chunks). */
  let grounding = emptyGrounding

  const finalize = () => {
    for (const search of webSearchesOf(grounding, responseId)) seq.webSearch(search)
    const counted = usage === undefined && grounding.queries.length > 0 ? emptyUsage : usage
    seq.finish({
      stopReason: geminiFinishToStopReason(finishReason, sawToolCalls),
      ...(counted ? { usage: withSearches(counted, grounding) } : {}),
      truncated: finishReason === undefined
    })
  }

  return {
    push: (event: UpstreamEvent) => {
      if (seq.done || !isRecord(event.data)) return []
      const data = event.data
      if (isRecord(data.error)) {
        seq.error(geminiErrorKind(data.error.status), asString(data.error.message) ?? "upstream error")
        return seq.drain()
      }
      seq.start(asString(data.responseId), asString(data.modelVersion))
      responseId = asString(data.responseId) ?? responseId
      const candidate = asRecord(asArray(data.candidates)[0])
      grounding = addGrounding(grounding, candidate)
      const converted = geminiPartsToIR(asRecord(candidate.content).parts, callIndex)
      callIndex = converted.nextCallIndex
      for (const part of converted.parts) {
        if (part.type === "text") seq.ensureText(part.text)
        else if (part.type === "thinking") {
          seq.ensureThinking(part.text)
          if (part.signature !== undefined) {
            if (seq.openKind !== "thinking") seq.openBlock({ type: "thinking" })
            seq.deltaSignature(part.signature, "gemini")
          }
        } else if (part.type === "tool_call") {
          sawToolCalls = true
          seq.openBlock({
            type: "tool_use",
            id: part.id,
            name: part.name,
            ...(part.signature === undefined ? {} : { signature: part.signature })
          })
          seq.deltaToolInput(JSON.stringify(part.input))
          seq.close()
        }
      }
      if (typeof candidate.finishReason === "string") finishReason = candidate.finishReason
      if (isRecord(data.usageMetadata)) {
        usage = geminiUsageToIR(data.usageMetadata)
        seq.usage(withSearches(usage, grounding))
      }
      return seq.drain()
    },
    end: () => {
      finalize()
      return seq.drain()
    }
  }
}

export interface GeminiStreamEncoderOptions {
  readonly id?: string
  readonly model?: string
}

export const makeGeminiStreamEncoder = (options: GeminiStreamEncoderOptions = {}): StreamEncoder => {
  let id = options.id ?? ""
  let model = options.model ?? ""
  let tool: { id: string; name: string; signature?: string; json: string } | undefined
  const chunk = (parts: ReadonlyArray<JsonRecord>, extra: JsonRecord = {}, candidate: JsonRecord = {}) =>
    sseData({
      candidates: [{ content: { role: "model", parts }, ...candidate, index: 0 }],
      ...extra,
      modelVersion: model,
      responseId: id
    })
  return {
    encode: (event) => {
      switch (event.type) {
        case "message_start":
          id = options.id ?? event.id
          model = options.model ?? event.model
          return []
        case "block_start":
          tool = event.block.type === "tool_use" ? { ...event.block, json: "" } : undefined
          return []
        case "text_delta":
          return [chunk([{ text: event.text }])]
        case "thinking_delta":
          return [chunk([{ text: event.text, thought: true }])]
        case "tool_input_delta":
          if (tool) tool.json += event.json
          return []
        case "block_stop": {
          if (tool === undefined) return []
          const call = tool
          tool = undefined
          const functionCall = { id: call.id, name: call.name, args: parseJsonObject(call.json) ?? {} }
          return [
            chunk([{ functionCall, ...(call.signature === undefined ? {} : { thoughtSignature: call.signature }) }])
          ]
        }
        case "message_end":
          return [
            chunk(
              [],
              { usageMetadata: irUsageToGemini(event.usage ?? emptyUsage) },
              { finishReason: stopReasonToGeminiFinish(event.stopReason) }
            )
          ]
        case "error": {
          const [code, status] = GEMINI_ERROR_STATUS[event.kind]
          return [sseData({ error: { code, message: event.message, status } })]
        }
        default:
          return []
      }
    }
  }
}
