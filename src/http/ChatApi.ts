/**
 * The text protocols: OpenAI chat completions, Anthropic messages (+ count_tokens) and Gemini generateContent, each
 * answering in its own dialect whatever protocol the model's upstream speaks.
 */
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { finishTally, tallyAnthropicMessages } from "../adapters/tokenizer/ChatTally.ts"
import { ChatGateway, type ChatInput, type ChatResult } from "../app/ChatGateway.ts"
import { ModelNotFound } from "../app/ChatErrors.ts"
import { PluginRegistry } from "../app/PluginRegistry.ts"
import { badRequest, type Dialect, notFound } from "./ApiError.ts"
import { authenticate } from "./Auth.ts"
import { type ChatEndpoint, chatShapeProblem, readJson, requiredFieldProblem } from "./RequestBody.ts"
import { HttpSettings, json, RequestId, route } from "./Route.ts"
import { noteModel } from "../app/RequestTelemetry.ts"
import { type StreamFraming, streamedReply } from "./StreamedReply.ts"

/** A chat result as the called protocol answers it: its JSON, or its stream in `framing`. */
export const respondWith = (result: ChatResult, framing: StreamFraming = "sse") =>
  result._tag === "Json" ? Effect.succeed(json(result.body)) : streamedReply(result.frames, framing)

const objectBody = (dialect: Dialect, endpoint: ChatEndpoint) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const body = yield* readJson(request, yield* HttpSettings, "forwarded")
    if (typeof body !== "object" || body === null || Array.isArray(body)) {
      return yield* badRequest("the request body must be a JSON object")
    }
    const problem = chatShapeProblem(dialect, body as Record<string, unknown>)
    if (problem !== undefined) return yield* problem
    const required = requiredFieldProblem(endpoint, body as Record<string, unknown>)
    if (required !== undefined) return yield* required
    return body as Record<string, unknown>
  })

const chat = (dialect: "openai" | "anthropic") =>
  Effect.gen(function* () {
    const key = yield* authenticate(dialect)
    const body = yield* objectBody(dialect, dialect === "openai" ? "chat_completions" : "messages")
    const input: ChatInput = { dialect, body, key, requestId: yield* RequestId }
    return yield* respondWith(yield* (yield* ChatGateway).chat(input))
  })

const countTokens = Effect.gen(function* () {
  yield* authenticate("anthropic")
  const body = yield* objectBody("anthropic", "count_tokens")
  if (typeof body.model !== "string") return yield* badRequest("model: is required", "model")
  if ((yield* PluginRegistry).resolve(body.model) === undefined) return yield* new ModelNotFound({ model: body.model })
  if (!Array.isArray(body.messages)) return yield* badRequest("messages: expected an array", "messages")
  const tally = tallyAnthropicMessages({
    messages: body.messages,
    system: body.system as never,
    tools: body.tools as never
  })
  return json({ input_tokens: yield* finishTally(tally) })
})

const GEMINI_PATH = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)$/

/** `:generateContent` and `:streamGenerateContent`, dispatched to from GeminiApi.ts with Google's other methods. */
export const gemini = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const url = new URL(request.url, "http://x")
  const match = GEMINI_PATH.exec(url.pathname)
  if (match === null) return yield* notFound(`unknown path ${url.pathname}`, "unknown_path")
  const pathModel = yield* Effect.try({
    try: () => decodeURIComponent(match[1]),
    catch: () => badRequest("the model in the path is not valid percent-encoded UTF-8", "model")
  })
  yield* noteModel(pathModel)
  const key = yield* authenticate("gemini")
  const body = yield* objectBody("gemini", "generate_content")
  const stream = match[2] === "streamGenerateContent"
  const input: ChatInput = {
    dialect: "gemini",
    body,
    pathModel,
    pathStream: stream,
    key,
    requestId: yield* RequestId
  }
  // Google streams SSE only when asked with `alt=sse`; otherwise one JSON array, element by element.
  return yield* respondWith(
    yield* (yield* ChatGateway).chat(input),
    url.searchParams.get("alt") === "sse" ? "sse" : "json-array"
  )
})

export const layer = Layer.mergeAll(
  route("POST", "/v1/chat/completions", chat("openai"), "openai"),
  route("POST", "/v1/messages", chat("anthropic"), "anthropic"),
  route("POST", "/v1/messages/count_tokens", countTokens, "anthropic")
)
