/**
 * The built-in chat-style image family (`chat-image`): Gemini image models behind `/v1/chat/completions` and the
 * native `generateContent` path. A chat client gets the façade of docs/api/images.md (caption plus Markdown data-URI
 * images, in the OpenAI dialect the gateway converts from); a Gemini client gets Gemini's own body or stream untouched.
 * One flat price per call, charged also for a text-only reply; the upstream's usage is recorded as information only.
 */
import { Clock, Effect, Result } from "effect"
import type { UpstreamClient } from "../../adapters/upstream/UpstreamClient.ts"
import { GeminiPaths } from "../../adapters/upstream/UpstreamEndpoints.ts"
import type { PriceKeys } from "../ModelPlugin.ts"
import type { ChatCall, ChatPlugin, ChatReply, PluginFailure, PricingRule } from "../ModelPlugin.ts"
import type { ChatRequest, Usage } from "../text/convert/ChatIR.ts"
import type { JsonRecord } from "../text/convert/json.ts"
import { failureFromUpstream, upstreamsFor, onUpstream } from "../UpstreamFailure.ts"
import { geminiBodyFromChat, geminiBodyFromNative, hasTools, toolsRejected } from "./GeminiImageRequest.ts"
import { completionFromGemini, MappedFrames, makeChunkMapper } from "./GeminiImageReply.ts"
import type { ImageFetcher } from "./ImageInputs.ts"

export const CHAT_IMAGE_PLUGIN_ID = "chat-image"

/** Flat per call: the hold is the price, and so is the charge, whatever the reply held. */
export const perCallPricing: PricingRule<{ readonly request: ChatRequest; readonly inputTokens: number }, Usage> = {
  estimate: (_input, model) => model.pricing.perCall ?? 0n,
  price: (_usage, model) => model.pricing.perCall ?? 0n
}

/** The prices this family bills by (the operator config may set no others). */
export const CHAT_IMAGE_PRICE_KEYS: PriceKeys = { allowed: ["perCall"], required: ["perCall"] }

export const makeChatImagePlugin = (client: UpstreamClient["Service"], fetcher: ImageFetcher): ChatPlugin => {
  const send = (call: ChatCall, body: JsonRecord) => {
    const model = call.model.upstreamModel
    const path = call.request.stream ? GeminiPaths.streamGenerateContent(model) : GeminiPaths.generateContent(model)
    const text = JSON.stringify(body)
    return onUpstream(call.model, upstreamsFor(call.model, ["gemini"]), "image", (upstream) =>
      client.request({
        upstream,
        method: "POST",
        path,
        headers: { "content-type": "application/json" },
        body: text,
        signal: call.signal
      })
    )
  }

  const invoke = (call: ChatCall): Effect.Effect<ChatReply, PluginFailure> =>
    Effect.gen(function* () {
      if (call.client.dialect === "gemini") {
        const body = yield* geminiBodyFromNative(call.client.body, fetcher, call.signal)
        const response = yield* send(call, body)
        if (call.request.stream) {
          return { _tag: "Events", dialect: "gemini", events: response.body.events() } satisfies ChatReply
        }
        const reply = yield* Effect.mapError(response.body.json, failureFromUpstream)
        return { _tag: "Body", dialect: "gemini", body: reply } satisfies ChatReply
      }
      const body = yield* geminiBodyFromChat(call, fetcher)
      const response = yield* send(call, body)
      const ids = {
        id: `chatcmpl-${call.requestId.replace(/^req_/, "")}`,
        model: call.model.id,
        created: Math.floor((yield* Clock.currentTimeMillis) / 1000)
      }
      if (call.request.stream) {
        const events = new MappedFrames(response.body.events(), makeChunkMapper(ids))
        return { _tag: "Events", dialect: "openai", events } satisfies ChatReply
      }
      const reply = yield* Effect.mapError(response.body.json, failureFromUpstream)
      const completion = completionFromGemini(reply, ids)
      if (Result.isFailure(completion)) return yield* Effect.fail(completion.failure)
      return { _tag: "Body", dialect: "openai", body: completion.success } satisfies ChatReply
    })

  return {
    specificationVersion: "v1",
    id: CHAT_IMAGE_PLUGIN_ID,
    family: "chat-image",
    kind: "chat",
    pricingKeys: CHAT_IMAGE_PRICE_KEYS,
    pricing: perCallPricing,
    invoke,
    // The spec's rule: an image model never takes tools, and the refusal is not billed (checked before the hold).
    check: (client, request) => (request.tools.length > 0 || hasTools(client.body) ? toolsRejected : undefined),
    // The price is flat: tokenizing megabytes of base64 for the hold would only cost time.
    countInput: () => 0
  }
}
