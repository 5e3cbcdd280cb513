/**
 * A Responses API stream → the streaming IR: the parser reads an `openai-responses` upstream's semantic events (output
 * items, content parts, text, reasoning summary and function-argument deltas, then `response.completed`/`incomplete`/
 * `failed`). The other way is responsesStreamEncoder.ts.
 */
import type { Usage } from "./ChatIR.ts"
import type { ErrorKind, Fallback, StreamEvent, StreamParser, UpstreamEvent } from "./ChatStream.ts"
import { makeSequencer } from "./ChatStream.ts"
import { asRecord, asString, type JsonRecord } from "./json.ts"
import { responsesUsageToIR, stopReasonOf } from "./responses.ts"
import { readResponsesEncrypted } from "./thinkingSignature.ts"

const errorKindOf = (code: unknown): ErrorKind =>
  code === "rate_limit_exceeded" ? "rate_limit" : code === "invalid_prompt" ? "invalid_request" : "api_error"

export const makeResponsesStreamParser = (fallback: Fallback): StreamParser => {
  const seq = makeSequencer(fallback)
  let sawToolCalls = false
  let argumentDeltas = 0
  let usage: Usage | undefined

  const finishWith = (response: JsonRecord) => {
    if (response.usage !== undefined && response.usage !== null) {
      usage = responsesUsageToIR(response.usage, response.output)
    }
    if (response.status === "failed") {
      const error = asRecord(response.error)
      seq.error(errorKindOf(error.code), asString(error.message) ?? "the upstream failed to finish the response")
      return
    }
    seq.finish({
      stopReason: stopReasonOf(response.status, response.incomplete_details, sawToolCalls),
      ...(usage === undefined ? {} : { usage }),
      truncated: false
    })
  }

  const push = (event: UpstreamEvent): ReadonlyArray<StreamEvent> => {
    const data = asRecord(event.data)
    const item = asRecord(data.item)
    switch (data.type) {
      case "response.created":
      case "response.in_progress": {
        const response = asRecord(data.response)
        seq.start(asString(response.id), asString(response.model))
        break
      }
      case "response.output_item.added":
        if (item.type === "reasoning") seq.openBlock({ type: "thinking" })
        else if (item.type === "function_call") {
          sawToolCalls = true
          argumentDeltas = 0
          seq.openBlock({ type: "tool_use", id: asString(item.call_id) ?? "", name: asString(item.name) ?? "" })
        }
        break
      case "response.output_text.delta":
      case "response.refusal.delta":
        seq.ensureText(asString(data.delta) ?? "")
        break
      case "response.reasoning_summary_part.added":
        if (typeof data.summary_index === "number" && data.summary_index > 0) seq.ensureThinking("\n\n")
        break
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        seq.ensureThinking(asString(data.delta) ?? "")
        break
      case "response.function_call_arguments.delta":
        argumentDeltas++
        seq.deltaToolInput(asString(data.delta) ?? "")
        break
      case "response.output_item.done":
        if (item.type === "reasoning") {
          const encrypted = readResponsesEncrypted(asString(item.encrypted_content))
          if (encrypted.type === "signed" && encrypted.origin !== "synthetic") {
            if (seq.openKind !== "thinking") seq.openBlock({ type: "thinking" })
            seq.deltaSignature(encrypted.signature, encrypted.origin)
          }
        } else if (item.type === "function_call" && argumentDeltas === 0) {
          seq.deltaToolInput(asString(item.arguments) ?? "")
        }
        if (item.type === "reasoning" || item.type === "function_call" || item.type === "message") seq.close()
        break
      case "response.completed":
      case "response.incomplete":
      case "response.failed":
        finishWith(asRecord(data.response))
        break
      case "error":
        seq.error(errorKindOf(data.code), asString(data.message) ?? "the upstream stream failed")
        break
    }
    return seq.drain()
  }

  return {
    push,
    end: () => {
      seq.finish({ stopReason: "end_turn", ...(usage === undefined ? {} : { usage }), truncated: true })
      return seq.drain()
    }
  }
}
