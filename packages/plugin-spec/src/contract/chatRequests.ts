/**
 * The chat suite's calls, built from a declarative fixture (`{ prompt, maxTokens, stream, client }`): the request in
 * the chat IR, and the client's own body in the dialect the fixture says the client called, as the gateway would hand
 * both to a plugin. One user turn, an optional system prompt, no tools.
 */
import type { ChatCall, ChatRequest } from "../chat.ts"
import type { Dialect, PluginModel } from "../common.ts"

/** What a fixture says of one call; the suite builds the rest. */
export interface ChatCallFixture {
  readonly name: string
  /** The user's message. */
  readonly prompt: string
  readonly system?: string | undefined
  /** The client's output cap (`max_tokens`); absent: the model's `maxOutputTokens` (Anthropic's clients always send one). */
  readonly maxTokens?: number | undefined
  readonly stream?: boolean | undefined
  /** The protocol the client called (default `openai`, chat completions). */
  readonly client?: Dialect | undefined
  /** The model to call (default: the fixtures' first). */
  readonly model?: PluginModel | undefined
}

/** The most output a reply to `request` may report: the request's cap, never above the model's. */
export const outputCapOf = (request: ChatRequest, model: PluginModel): number =>
  Math.max(0, Math.min(request.maxTokens ?? model.maxOutputTokens, model.maxOutputTokens))

const maxTokensOf = (fixture: ChatCallFixture, model: PluginModel): number | undefined =>
  fixture.maxTokens ?? ((fixture.client ?? "openai") === "anthropic" ? model.maxOutputTokens : undefined)

/** The request in the chat IR, as the gateway validates a client's body into it. */
export const chatRequestOf = (fixture: ChatCallFixture, model: PluginModel): ChatRequest => {
  const stream = fixture.stream === true
  const maxTokens = maxTokensOf(fixture, model)
  return {
    model: model.id,
    system: fixture.system === undefined ? [] : [{ type: "text", text: fixture.system }],
    messages: [{ role: "user", content: [{ type: "text", text: fixture.prompt }] }],
    tools: [],
    stream,
    ...(maxTokens === undefined ? {} : { maxTokens }),
    ...(stream && (fixture.client ?? "openai") === "openai" ? { includeUsage: true } : {})
  }
}

/** The client's body in its own dialect (Gemini's carries model and streaming in the URL, not the body). */
export const clientBodyOf = (fixture: ChatCallFixture, model: PluginModel): Readonly<Record<string, unknown>> => {
  const stream = fixture.stream === true
  const maxTokens = maxTokensOf(fixture, model)
  const { prompt, system } = fixture
  switch (fixture.client ?? "openai") {
    case "openai":
      return {
        model: model.id,
        messages: [
          ...(system === undefined ? [] : [{ role: "system", content: system }]),
          { role: "user", content: prompt }
        ],
        ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {})
      }
    case "anthropic":
      return {
        model: model.id,
        ...(system === undefined ? {} : { system }),
        messages: [{ role: "user", content: prompt }],
        max_tokens: maxTokens,
        stream
      }
    case "gemini":
      return {
        contents: [{ role: "user", parts: [{ text: prompt }] }],
        ...(system === undefined ? {} : { systemInstruction: { parts: [{ text: system }] } }),
        ...(maxTokens === undefined ? {} : { generationConfig: { maxOutputTokens: maxTokens } })
      }
    case "responses":
      return {
        model: model.id,
        input: prompt,
        ...(system === undefined ? {} : { instructions: system }),
        ...(maxTokens === undefined ? {} : { max_output_tokens: maxTokens }),
        stream
      }
  }
}

/** The call a plugin receives for a fixture, without its signal and capabilities (the suite adds them per run). */
export const chatCallOf = (
  fixture: ChatCallFixture,
  model: PluginModel
): Omit<ChatCall, "signal" | "http" | "tokens"> => ({
  model,
  request: chatRequestOf(fixture, model),
  client: { dialect: fixture.client ?? "openai", body: clientBodyOf(fixture, model) },
  requestId: `contract-${fixture.name.replaceAll(/[^A-Za-z0-9]+/g, "-")}`
})
