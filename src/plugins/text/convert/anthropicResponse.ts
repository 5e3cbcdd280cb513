/** An Anthropic messages response to the chat IR and back (content blocks, usage, stop reason). */
import { Result } from "effect"
import type { AssistantPart, ChatResponse, Converted } from "./ChatIR.ts"
import { convertError } from "./ChatIR.ts"
import { asArray, asRecord, asString, compact, isRecord, type JsonRecord } from "./json.ts"
import { clientSignature, packToolId, syntheticSignature } from "./thinkingSignature.ts"
import { restoreToolId, sanitizeToolId } from "./toolId.ts"
import { anthropicUsageToIR, irUsageToAnthropic, stopReasonToAnthropic } from "./anthropic.ts"
import { thinkingBlockToIR } from "./anthropicRequestToIR.ts"
import { webSearchesOf } from "./anthropicWebSearch.ts"

// ---------------------------------------------------------------------------------------------------------------
// response: Anthropic → IR and IR → Anthropic

export const anthropicResponseToIR = (body: unknown): Converted<ChatResponse> => {
  if (!isRecord(body)) return convertError("", "response body must be a JSON object")
  const content: Array<AssistantPart> = []
  for (const raw of asArray(body.content)) {
    const block = asRecord(raw)
    switch (block.type) {
      case "text":
        content.push({ type: "text", text: asString(block.text) ?? "" })
        break
      case "thinking":
        content.push(thinkingBlockToIR(block))
        break
      case "redacted_thinking":
        content.push({ type: "redacted_thinking", data: asString(block.data) ?? "" })
        break
      case "tool_use":
        content.push({
          type: "tool_call",
          id: restoreToolId(asString(block.id) ?? ""),
          name: asString(block.name) ?? "",
          input: asRecord(block.input)
        })
        break
    }
  }
  const stopSequence = asString(body.stop_sequence)
  const searches = webSearchesOf(asArray(body.content))
  return Result.succeed(
    compact({
      id: asString(body.id) ?? "",
      model: asString(body.model) ?? "",
      content,
      webSearches: searches.length > 0 ? searches : undefined,
      stopReason: asString(body.stop_reason) ?? "end_turn",
      stopSequence,
      usage: anthropicUsageToIR(body.usage)
    })
  )
}

const responseBlockOf = (part: AssistantPart): JsonRecord => {
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text }
    case "thinking":
      return {
        type: "thinking",
        thinking: part.text,
        signature:
          part.signature === undefined
            ? syntheticSignature(part.text)
            : clientSignature(part.signature, part.signatureOrigin)
      }
    case "redacted_thinking":
      return { type: "redacted_thinking", data: part.data }
    case "tool_call":
      return {
        type: "tool_use",
        id: sanitizeToolId(packToolId(part.id, part.signature)),
        name: part.name,
        input: part.input
      }
  }
}

export const irToAnthropicResponse = (response: ChatResponse): JsonRecord => ({
  id: response.id,
  type: "message",
  role: "assistant",
  model: response.model,
  content: response.content.map(responseBlockOf),
  stop_reason: stopReasonToAnthropic(response.stopReason),
  stop_sequence: response.stopSequence ?? null,
  usage: irUsageToAnthropic(response.usage)
})
