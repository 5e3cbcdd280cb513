/**
 * The built-in text family: one upstream call per attempt, in the upstream's own protocol. A client whose dialect
 * matches the upstream's is passed through untouched (only `model` is swapped, and streams always ask for usage);
 * any other pair is converted through the internal representation. Each attempt is on the one upstream routing chose
 * (UpstreamFailure.ts `onUpstream`); another deployment is routing's to try, and only before a stream is handed back.
 */
import { jsonBody } from "../../adapters/json/SlicedJson.ts"
import { Effect, Result } from "effect"
import type { UpstreamConfig } from "../ModelPlugin.ts"
import type { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import { AnthropicPaths, GeminiPaths, OpenAiPaths } from "../../adapters/upstream/UpstreamEndpoints.ts"
import { type ChatCall, type ChatPlugin, type ChatReply, type PluginFailure, pluginFailure } from "../ModelPlugin.ts"
import { irToAnthropicRequest } from "./convert/anthropic.ts"
import { type Converted, convertError } from "./convert/ChatIR.ts"
import { irToResponsesRequest } from "./convert/responses.ts"
import { toResponsesUpstream } from "./convert/responsesUpstream.ts"
import { irToGeminiRequest } from "./convert/gemini.ts"
import { asRecord } from "./convert/json.ts"
import { irToOpenAIRequest } from "./convert/openai.ts"
import { signatureOriginOf, unpackToolId } from "./convert/thinkingSignature.ts"
import { restoreToolId, sanitizeToolId } from "./convert/toolId.ts"
import { outputCap, TEXT_PRICE_KEYS, textPricing } from "./TextPricing.ts"
import { dialectOf, hostedToolNotes, hostedToolRefusal, isTextProtocol, type TextProtocol } from "./HostedTools.ts"
import { onUpstream } from "../UpstreamFailure.ts"

const speaksText = (upstream: UpstreamConfig): upstream is UpstreamConfig & { readonly protocol: TextProtocol } =>
  isTextProtocol(upstream.protocol)

/**
 * Anthropic rejects a tool-result turn with thinking on unless the assistant turn it answers starts with a signed
 * thinking block. A client of another dialect cannot send that signature back (its reasoning is stripped on the way
 * in), so thinking is turned off for such a turn instead of failing the whole tool loop (lossy: no thinking there).
 */
const withReplayableThinking = (body: Record<string, unknown>): Record<string, unknown> => {
  const thinking = asRecord(body.thinking)
  if (thinking.type !== "enabled" && thinking.type !== "adaptive") return body
  const messages = Array.isArray(body.messages) ? body.messages.map(asRecord) : []
  const last = messages.at(-1)
  const assistant = messages.at(-2)
  const answersTools =
    last?.role === "user" &&
    Array.isArray(last.content) &&
    last.content.some((block) => asRecord(block).type === "tool_result")
  if (!answersTools || assistant?.role !== "assistant") return body
  const first = Array.isArray(assistant.content) ? asRecord(assistant.content[0]).type : "text"
  if (first === "thinking" || first === "redacted_thinking") return body
  const { thinking: _dropped, ...rest } = body
  return rest
}

const gatewayToolId = (id: unknown): string | undefined => {
  if (typeof id !== "string") return undefined
  const { id: own, signature } = unpackToolId(restoreToolId(id))
  return signature === undefined ? undefined : sanitizeToolId(own)
}

/**
 * An Anthropic client's history goes to an Anthropic upstream untouched, except what the gateway itself handed out
 * for another vendor's turns (see thinkingSignature.ts): thinking blocks whose signature Anthropic did not issue are
 * dropped, since Anthropic refuses the whole request over one (and keeping their text as an assistant text block would
 * put reasoning in the model's mouth as if it had said it), and tool ids carrying a Gemini signature get their own id
 * back. The body is only rebuilt when there is something to drop.
 */
export const withoutForeignSignatures = (body: Record<string, unknown>): Record<string, unknown> => {
  if (!Array.isArray(body.messages)) return body
  let changed = false
  const messages = body.messages.flatMap((raw): ReadonlyArray<unknown> => {
    const message = asRecord(raw)
    const blocks: unknown = message.content
    if (!Array.isArray(blocks)) return [raw]
    const content = blocks.flatMap((rawBlock): ReadonlyArray<unknown> => {
      const block = asRecord(rawBlock)
      if (
        message.role === "assistant" &&
        block.type === "thinking" &&
        typeof block.signature === "string" &&
        signatureOriginOf(block.signature) !== "anthropic"
      ) {
        changed = true
        return []
      }
      const key = block.type === "tool_use" ? "id" : block.type === "tool_result" ? "tool_use_id" : undefined
      const own = key === undefined ? undefined : gatewayToolId(block[key])
      if (key === undefined || own === undefined) return [rawBlock]
      changed = true
      return [{ ...block, [key]: own }]
    })
    if (content.length === blocks.length && content.every((b, i) => b === blocks[i])) return [raw]
    return message.role === "assistant" && content.length === 0 ? [] : [{ ...message, content }]
  })
  return changed ? withReplayableThinking({ ...body, messages }) : body
}

interface UpstreamCall {
  readonly path: string
  readonly body: Record<string, unknown>
}

export const buildCall = (call: ChatCall, protocol: TextProtocol): Converted<UpstreamCall> => {
  const { model, request, client } = call
  const stream = request.stream
  const cap = outputCap(request, model)
  // What only the client's own protocol can say goes nowhere else.
  const unconvertible = request.nativeOnly?.[0]
  if (unconvertible !== undefined && client.dialect !== dialectOf(protocol)) {
    return convertError(unconvertible.param, unconvertible.message)
  }
  switch (protocol) {
    case "openai-responses": {
      const capped = (body: Record<string, unknown>) =>
        body.max_output_tokens === undefined || body.max_output_tokens === null
          ? { ...body, max_output_tokens: cap }
          : body
      if (client.dialect === "responses") {
        return Result.succeed({
          path: OpenAiPaths.responses,
          body: capped(toResponsesUpstream(client.body, model.upstreamModel))
        })
      }
      return Result.map(irToResponsesRequest(request), (body) => ({
        path: OpenAiPaths.responses,
        body: capped({ ...body, model: model.upstreamModel })
      }))
    }
    case "openai": {
      // The hold covers the output cap, so the upstream must never be free to write more than it.
      const capped = (body: Record<string, unknown>) =>
        body.max_tokens === undefined && body.max_completion_tokens === undefined
          ? { ...body, max_completion_tokens: cap }
          : body
      if (client.dialect === "openai") {
        const streamOptions = client.body.stream_options as Record<string, unknown> | undefined
        return Result.succeed({
          path: OpenAiPaths.chatCompletions,
          body: capped({
            ...client.body,
            model: model.upstreamModel,
            ...(stream ? { stream_options: { ...streamOptions, include_usage: true } } : {})
          })
        })
      }
      return Result.map(irToOpenAIRequest(request), (body) => ({
        path: OpenAiPaths.chatCompletions,
        body: capped({ ...body, model: model.upstreamModel })
      }))
    }
    case "anthropic": {
      if (client.dialect === "anthropic") {
        return Result.succeed({
          path: AnthropicPaths.messages,
          body: withoutForeignSignatures({ ...client.body, model: model.upstreamModel })
        })
      }
      return Result.map(irToAnthropicRequest(request, { defaultMaxTokens: cap }), (body) => ({
        path: AnthropicPaths.messages,
        body: withReplayableThinking({ ...body, model: model.upstreamModel })
      }))
    }
    case "gemini":
      return Result.map(irToGeminiRequest(request), (body) => {
        const config = (body.generationConfig ?? {}) as Record<string, unknown>
        return {
          path: stream
            ? GeminiPaths.streamGenerateContent(model.upstreamModel)
            : GeminiPaths.generateContent(model.upstreamModel),
          body:
            config.maxOutputTokens === undefined
              ? { ...body, generationConfig: { ...config, maxOutputTokens: cap } }
              : body
        }
      })
  }
}

export const makeTextPlugin = (client: UpstreamClient["Service"]): ChatPlugin => {
  const attempt = (call: ChatCall, upstream: UpstreamConfig, protocol: TextProtocol) =>
    Effect.gen(function* () {
      const built = buildCall(call, protocol)
      if (Result.isFailure(built)) {
        return yield* Effect.fail(
          pluginFailure(
            "invalid_request",
            `${built.failure.param ? `${built.failure.param}: ` : ""}${built.failure.message}`
          )
        )
      }
      const response = yield* client.request({
        upstream,
        method: "POST",
        path: built.success.path,
        headers: { "content-type": "application/json" },
        body: yield* jsonBody(built.success.body),
        signal: call.signal
      })
      if (call.request.stream) {
        return { _tag: "Events", dialect: dialectOf(protocol), events: response.body.events() } satisfies ChatReply
      }
      const body = yield* response.body.json
      return { _tag: "Body", dialect: dialectOf(protocol), body } satisfies ChatReply
    })

  const invoke = (call: ChatCall): Effect.Effect<ChatReply, PluginFailure> =>
    onUpstream(call.model, call.model.upstreams.filter(speaksText), "text", (upstream) =>
      attempt(call, upstream, upstream.protocol)
    )

  /**
   * What only the client's own protocol can say is refused before anything is held when no upstream speaks it; a
   * hosted tool no upstream runs, when the operator refuses those (HostedTools.ts).
   */
  const check: ChatPlugin["check"] = (client, request, model) => {
    const unconvertible = request.nativeOnly?.[0]
    if (unconvertible === undefined) return hostedToolRefusal(client, request, model)
    const native = (upstream: UpstreamConfig) =>
      isTextProtocol(upstream.protocol) && dialectOf(upstream.protocol) === client.dialect
    return model.upstreams.some(native)
      ? hostedToolRefusal(client, request, model)
      : pluginFailure("invalid_request", `${unconvertible.param}: ${unconvertible.message}`, {
          code: "unsupported_parameter",
          param: unconvertible.param
        })
  }

  return {
    specificationVersion: "v1",
    id: "text",
    family: "text",
    kind: "chat",
    pricingKeys: TEXT_PRICE_KEYS,
    pricing: textPricing,
    invoke,
    check,
    notes: hostedToolNotes
  }
}
