import { createMessage, countTokens, listAnthropicModels } from "./AnthropicMessages.ts"
import type { AudioReply } from "./audio/AudioReply.ts"
import { GEMINI_ROUTE, geminiGenerate } from "./GeminiGenerate.ts"
import { geminiImage, isGeminiImageModel } from "./images/GeminiImage.ts"
import { IMAGES_EDITS_PATH, IMAGES_GENERATIONS_PATH, imagesEdits, imagesGenerations } from "./images/OpenAIImages.ts"
import type { RawSimRequest } from "./images/EditInputs.ts"
import { anthropicError, geminiError, openAIError } from "./ErrorEnvelopes.ts"
import { chatCompletions, listOpenAIModels } from "./OpenAIChat.ts"
import { createResponse } from "./OpenAIResponses.ts"
import type { CacheKnobs } from "./PromptCache.ts"
import { type Dialect, json, type JsonReply, type SimContext, type SimReply, type SimRequest } from "./SimResponse.ts"
import type { FileReply } from "./video/VideoFiles.ts"

const DEFAULT_MODELS = [
  "gpt-4o-mini",
  "gpt-5",
  "claude-sonnet-4-5",
  "claude-opus-4-1",
  "gemini-2.5-flash",
  "gemini-2.5-pro"
]

export interface Route {
  readonly dialect: Dialect
  /** A forced error's body when the route's envelope differs from its dialect's (Ark video tasks). */
  readonly forcedBody?: ((status: number, requestId: string) => unknown) | undefined
  /** `replyTokens` and `cache` come from the request's fault knobs; only the text routes read them. */
  readonly handle: (
    request: SimRequest,
    context: SimContext,
    replyTokens: number,
    cache: CacheKnobs
  ) => SimReply | FileReply | AudioReply
}

export const route = (request: RawSimRequest): Route | undefined => {
  const { method, path } = request
  if (method === "POST" && path === "/v1/chat/completions") return { dialect: "openai", handle: chatCompletions }
  if (method === "POST" && path === "/v1/responses") return { dialect: "openai", handle: createResponse }
  if (method === "POST" && path === IMAGES_GENERATIONS_PATH) {
    return { dialect: "openai", handle: (_, ctx) => imagesGenerations(request, ctx) }
  }
  if (method === "POST" && path === IMAGES_EDITS_PATH) {
    return { dialect: "openai", handle: (_, ctx) => imagesEdits(request, ctx) }
  }
  if (method === "POST" && path === "/v1/messages") return { dialect: "anthropic", handle: createMessage }
  if (method === "POST" && path === "/v1/messages/count_tokens") {
    return { dialect: "anthropic", handle: (req, ctx) => countTokens(req, ctx) }
  }
  if (method === "GET" && path === "/v1/models") {
    // Both vendors use this path; the Anthropic SDK always sends `anthropic-version`.
    return request.headers["anthropic-version"] !== undefined || request.headers["x-api-key"] !== undefined
      ? { dialect: "anthropic", handle: (req, ctx) => listAnthropicModels(req, ctx, DEFAULT_MODELS) }
      : { dialect: "openai", handle: (req, ctx) => listOpenAIModels(req, ctx, DEFAULT_MODELS) }
  }
  const gemini = method === "POST" ? GEMINI_ROUTE.exec(path) : null
  if (gemini !== null) {
    const model = decodeURIComponent(gemini[1]!)
    const geminiMethod = gemini[2]!
    if (isGeminiImageModel(model) && (geminiMethod === "generateContent" || geminiMethod === "streamGenerateContent")) {
      return { dialect: "gemini", handle: (req, ctx) => geminiImage(req, ctx, model, geminiMethod) }
    }
    return {
      dialect: "gemini",
      handle: (req, ctx, tokens, cache) => geminiGenerate(req, ctx, model, geminiMethod, tokens, cache)
    }
  }
  return undefined
}

export const notFound = (request: SimRequest): JsonReply => {
  const message = `Unknown request URL: ${request.method} ${request.path}.`
  if (request.path.startsWith("/v1beta") || request.path.startsWith("/v1alpha"))
    return json(404, geminiError(404, message))
  if (request.headers["anthropic-version"] !== undefined) return json(404, anthropicError(404, message, "req_sim_404"))
  return json(404, openAIError(404, message, { code: "unknown_url" }))
}

/** Starts a simulator; resolves once it listens. */
