/**
 * A Responses API `Response` object: read from an `openai-responses` upstream into the IR, written for a Responses
 * client from the IR, and an upstream's own object presented as the gateway's (its id, the client's settings echoed,
 * encrypted reasoning shown only to a client that asked for it with `include`).
 */
import { Result } from "effect"
import type { AssistantPart, ChatResponse, Converted } from "./ChatIR.ts"
import { convertError } from "./ChatIR.ts"
import { asArray, asRecord, asString, compact, isRecord, type JsonRecord, parseJsonObject } from "./json.ts"
import {
  irUsageToResponses,
  itemId,
  outputItems,
  responsesUsageToIR,
  statusOf,
  stopReasonOf,
  webSearchCallItem
} from "./responses.ts"
import { readResponsesEncrypted } from "./thinkingSignature.ts"
import { toolNamesOf } from "./toolNamespaces.ts"

/** Output items of a Responses reply in the IR; built-in tools' items are dropped (see responses.ts). */
export const responsesOutputToIR = (output: unknown): ReadonlyArray<AssistantPart> =>
  asArray(output).flatMap((raw): ReadonlyArray<AssistantPart> => {
    const item = asRecord(raw)
    switch (item.type) {
      case "message":
        return asArray(item.content).flatMap((p): ReadonlyArray<AssistantPart> => {
          const part = asRecord(p)
          const text = part.type === "refusal" ? asString(part.refusal) : asString(part.text)
          return text === undefined || text === "" ? [] : [{ type: "text", text }]
        })
      case "function_call":
        return [
          {
            type: "tool_call",
            id: asString(item.call_id) ?? "",
            name: asString(item.name) ?? "",
            input: parseJsonObject(asString(item.arguments) ?? "") ?? {}
          }
        ]
      case "reasoning": {
        const text = asArray(item.summary)
          .flatMap((s) => {
            const t = asString(asRecord(s).text)
            return t === undefined ? [] : [t]
          })
          .join("\n\n")
        const encrypted = readResponsesEncrypted(asString(item.encrypted_content))
        if (encrypted.type === "redacted") return [{ type: "redacted_thinking", data: encrypted.data }]
        if (encrypted.type === "unsigned") return text === "" ? [] : [{ type: "thinking", text }]
        return [{ type: "thinking", text, signature: encrypted.signature, signatureOrigin: encrypted.origin }]
      }
      default:
        return []
    }
  })

export const responsesResponseToIR = (body: unknown): Converted<ChatResponse> => {
  if (!isRecord(body)) return convertError("", "response body must be a JSON object")
  if (!Array.isArray(body.output)) return convertError("output", "response has no output")
  const content = responsesOutputToIR(body.output)
  return Result.succeed({
    id: asString(body.id) ?? "",
    model: asString(body.model) ?? "",
    content,
    stopReason: stopReasonOf(
      body.status,
      body.incomplete_details,
      content.some((p) => p.type === "tool_call")
    ),
    usage: responsesUsageToIR(body.usage, body.output)
  })
}

/** A function tool as a Response repeats it: `description`, `parameters` and `strict` always present (null when not sent). */
const echoedTool = (tool: unknown): unknown =>
  isRecord(tool) && tool.type === "function"
    ? {
        ...tool,
        description: tool.description ?? null,
        parameters: tool.parameters ?? null,
        strict: tool.strict ?? null
      }
    : tool

/** The request's settings as a Response object repeats them (OpenAI's defaults where the client set none). */
/** The conversation a request names: its id, or the `id` of the object it gives. */
export const conversationIdOf = (conversation: unknown): string | undefined =>
  typeof conversation === "string"
    ? conversation
    : isRecord(conversation) && typeof conversation.id === "string"
      ? conversation.id
      : undefined

export const echoedSettings = (body: JsonRecord): JsonRecord => ({
  instructions: body.instructions ?? null,
  tools: asArray(body.tools).map(echoedTool),
  tool_choice: body.tool_choice ?? "auto",
  parallel_tool_calls: typeof body.parallel_tool_calls === "boolean" ? body.parallel_tool_calls : true,
  temperature: typeof body.temperature === "number" ? body.temperature : 1,
  top_p: typeof body.top_p === "number" ? body.top_p : 1,
  max_output_tokens: typeof body.max_output_tokens === "number" ? body.max_output_tokens : null,
  previous_response_id: typeof body.previous_response_id === "string" ? body.previous_response_id : null,
  reasoning: isRecord(body.reasoning)
    ? { effort: body.reasoning.effort ?? null, summary: body.reasoning.summary ?? null }
    : { effort: null, summary: null },
  text: isRecord(body.text) ? body.text : { format: { type: "text" } },
  truncation: body.truncation === "auto" ? "auto" : "disabled",
  metadata: isRecord(body.metadata) ? body.metadata : {},
  store: body.store !== false,
  background: body.background === true,
  ...(conversationIdOf(body.conversation) === undefined
    ? {}
    : { conversation: { id: conversationIdOf(body.conversation) } }),
  ...(typeof body.safety_identifier === "string" ? { safety_identifier: body.safety_identifier } : {}),
  ...(typeof body.user === "string" ? { user: body.user } : {})
})

export interface ResponseIdentity {
  readonly id: string
  readonly model: string
  /** Unix seconds. */
  readonly createdAt: number
}

/** A Response object for the client, from the IR (output item ids derived from the response id). */
export const irToResponsesResponse = (
  response: ChatResponse,
  identity: ResponseIdentity,
  body: JsonRecord
): JsonRecord => {
  const { status, incomplete_details } = statusOf(response.stopReason)
  return {
    id: identity.id,
    object: "response",
    created_at: identity.createdAt,
    status,
    ...(status === "completed" ? { completed_at: identity.createdAt } : {}),
    error: status === "failed" ? { code: "server_error", message: "the model failed to finish" } : null,
    incomplete_details,
    model: identity.model,
    output: [
      ...(response.webSearches ?? []).map((search, i) => webSearchCallItem(search, itemId("ws", identity.id, i))),
      ...outputItems(response.content, identity.id, toolNamesOf(body.tools))
    ],
    ...echoedSettings(body),
    usage: irUsageToResponses(response.usage)
  }
}

/** Does the client see reasoning items' `encrypted_content` (it asked with `include`)? */
export const wantsEncrypted = (body: JsonRecord): boolean =>
  asArray(body.include).includes("reasoning.encrypted_content")

/** An output item as a client that did not ask for encrypted reasoning sees it. */
export const withoutEncrypted = (item: unknown): unknown => {
  if (!isRecord(item) || item.type !== "reasoning" || item.encrypted_content === undefined) return item
  const { encrypted_content: _hidden, ...rest } = item
  return rest
}

/** A Response object (the gateway's or an upstream's) as the gateway keeps it: its id, model and the client's settings. */
export const asGatewayResponse = (raw: JsonRecord, identity: ResponseIdentity, body: JsonRecord): JsonRecord =>
  compact({
    ...raw,
    id: identity.id,
    model: identity.model,
    created_at: identity.createdAt,
    ...echoedSettings(body),
    usage: raw.usage
  })

/** A stored or final Response object as this client may see it. */
export const forClient = (response: JsonRecord, body: JsonRecord): JsonRecord =>
  wantsEncrypted(body) || !Array.isArray(response.output)
    ? response
    : { ...response, output: response.output.map(withoutEncrypted) }
