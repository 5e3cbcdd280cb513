/** OpenAI's chat-completion response to the chat IR and back (the usage, the finish reason, the tool calls). */
import { Result } from "effect"
import type { AssistantPart, ChatResponse, Converted, ToolCallPart } from "./ChatIR.ts"
import { convertError } from "./ChatIR.ts"
import { asArray, asRecord, asString, compact, isRecord, type JsonRecord, parseJsonObject } from "./json.ts"
import {
  type OpenAIResponseOptions,
  irUsageToOpenAI,
  openAIFinishToStopReason,
  openAIUsageToIR,
  stopReasonToOpenAIFinish,
  toolCallToOpenAI
} from "./openai.ts"
import { reasoningFieldOf, reasoningOf, refusalOf, textOf } from "./openaiRequestToIR.ts"

// ---------------------------------------------------------------------------------------------------------------
// response: OpenAI → IR and IR → OpenAI

export const openAIResponseToIR = (body: unknown): Converted<ChatResponse> => {
  if (!isRecord(body)) return convertError("", "response body must be a JSON object")
  const choice = asArray(body.choices)[0]
  if (!isRecord(choice)) return convertError("choices", "response has no choices")
  const message = asRecord(choice.message)
  const content: Array<AssistantPart> = [...reasoningOf(message)]
  const texts = textOf(message.content, "choices.0.message.content")
  if (Result.isSuccess(texts)) content.push(...texts.success.filter((t) => t.text !== ""))
  content.push(...refusalOf(message, content))
  for (const raw of asArray(message.tool_calls)) {
    const call = asRecord(raw)
    const fn = asRecord(call.function)
    content.push({
      type: "tool_call",
      id: asString(call.id) ?? "",
      name: asString(fn.name) ?? "",
      input: parseJsonObject(asString(fn.arguments) ?? "") ?? {}
    })
  }
  const sawToolCalls = content.some((p) => p.type === "tool_call")
  return Result.succeed({
    id: asString(body.id) ?? "",
    model: asString(body.model) ?? "",
    content,
    stopReason: openAIFinishToStopReason(choice.finish_reason, sawToolCalls),
    usage: openAIUsageToIR(body.usage)
  })
}

/**
 * OpenAI clients (and the logs and dashboards built on them) take a completion id to start with `chatcmpl-`; another
 * vendor's id is kept behind the prefix so the upstream's record can still be found from it.
 */
export const chatCompletionId = (id: string): string => (id.startsWith("chatcmpl-") ? id : `chatcmpl-${id}`)

export const irToOpenAIResponse = (response: ChatResponse, options: OpenAIResponseOptions): JsonRecord => {
  const text = response.content.flatMap((p) => (p.type === "text" ? [p.text] : []))
  const calls = response.content.filter((p): p is ToolCallPart => p.type === "tool_call")
  return {
    id: options.id ?? chatCompletionId(response.id),
    object: "chat.completion",
    created: options.created,
    model: response.model,
    choices: [
      {
        index: 0,
        message: compact({
          role: "assistant",
          content: text.length > 0 ? text.join("") : null,
          refusal: null,
          tool_calls: calls.length > 0 ? calls.map((call) => toolCallToOpenAI(call, true)) : undefined,
          ...reasoningFieldOf(response.content, options.reasoningField ?? "reasoning_content")
        }),
        logprobs: null,
        finish_reason: stopReasonToOpenAIFinish(response.stopReason, calls.length > 0)
      }
    ],
    usage: irUsageToOpenAI(response.usage)
  }
}
