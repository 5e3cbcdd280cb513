/**
 * A Tollgate chat plugin for Acme, a made-up vendor with a protocol of its own: `POST /v1/generate`, the key in an
 * `x-acme-key` header (the operator config's `auth: { header: x-acme-key }`: the gateway adds it, this code never
 * sees it), an NDJSON answer read as it arrives through the gateway's HTTP capability (`call.http` … `chunks()`).
 * The plugin answers in OpenAI's chat-completion dialect, a whole body or SSE events; the gateway converts that for
 * Anthropic, Gemini and Responses clients, holds `estimate` before the call and charges `price(usage)` after it.
 * Priced per token: `input` and `output`, USD per 1M tokens. Replace the Acme parts with your vendor's.
 */
import type {
  ChatCall,
  ChatPlugin,
  ChatReply,
  ChatRequest,
  PluginFailure,
  PluginModel,
  SseFrame,
  Usage
} from "@tollgate/plugin-spec/chat"
import { Clock, Effect } from "effect"

/** One line of Acme's NDJSON answer. */
type AcmeLine =
  | { readonly type: "token"; readonly text: string }
  | { readonly type: "done"; readonly stop: string; readonly usage: { readonly prompt: number; readonly generated: number } }
  | { readonly type: "error"; readonly message: string }

const failure = (reason: PluginFailure["reason"], message: string, detail?: string): PluginFailure => ({
  _tag: "PluginFailure",
  reason,
  message,
  ...(detail === undefined ? {} : { detail })
})

const isFailure = (error: unknown): error is PluginFailure =>
  typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "PluginFailure"

// ---------------------------------------------------------------------------------------------------------------------
// Pricing: every prompt token at `input`, every generated one at `output`, rounded up to the micro-dollar.

/** The most a reply may generate: the client's cap, never above the model's. */
export const outputCap = (request: ChatRequest, model: PluginModel): number =>
  Math.max(0, Math.min(request.maxTokens ?? model.maxOutputTokens, model.maxOutputTokens))

const perMillion = (tokens: number, price: bigint | undefined): bigint =>
  (BigInt(Math.max(0, Math.ceil(tokens))) * (price ?? 0n) + 999_999n) / 1_000_000n

const pricing: ChatPlugin["pricing"] = {
  estimate: ({ request, inputTokens }, model) =>
    perMillion(inputTokens, model.pricing.input) + perMillion(outputCap(request, model), model.pricing.output),
  price: (usage: Usage, model) =>
    perMillion(usage.inputTokens + usage.cacheReadTokens + usage.cacheWriteTokens, model.pricing.input) +
    perMillion(usage.outputTokens, model.pricing.output)
}

// ---------------------------------------------------------------------------------------------------------------------
// The request, in Acme's shape: text only (see `check`).

const textOf = (parts: ReadonlyArray<{ readonly type: string; readonly text?: string }>): string =>
  parts.map((part) => part.text ?? "").join(" ")

const acmeMessages = (request: ChatRequest) => [
  ...(request.system.length === 0 ? [] : [{ role: "system", text: textOf(request.system) }]),
  ...request.messages.map((message) => ({
    role: message.role,
    text: message.content
      .map((part) => (part.type === "tool_result" ? textOf(part.content) : part.type === "text" ? part.text : ""))
      .join(" ")
  }))
]

/** Refused before anything is held: what Acme cannot take. */
const check: ChatPlugin["check"] = (_client, request) => {
  if (request.tools.length > 0) return { ...failure("invalid_request", "Acme models take no tools"), param: "tools" }
  if (request.messages.some((message) => message.content.some((part) => part.type === "image"))) {
    return { ...failure("invalid_request", "Acme models take text only"), param: "messages" }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------------------------------
// The answer: Acme's NDJSON lines, as they arrive.

/** NDJSON lines from a byte stream (a line may be cut across chunks); an error line fails the read. */
async function* linesOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<AcmeLine> {
  const decoder = new TextDecoder()
  let buffer = ""
  const parse = (text: string): AcmeLine => {
    let line: AcmeLine
    try {
      line = JSON.parse(text) as AcmeLine
    } catch {
      throw failure("unavailable", "the vendor sent a malformed answer", text.slice(0, 500))
    }
    // The vendor's words go to the logs (`detail`), never to the client.
    if (line.type === "error") throw failure("unavailable", "the vendor failed mid-answer", line.message)
    return line
  }
  for await (const chunk of chunks) {
    buffer += decoder.decode(chunk, { stream: true })
    const lines = buffer.split("\n")
    buffer = lines.pop() ?? ""
    for (const text of lines) if (text.trim() !== "") yield parse(text)
  }
  if (buffer.trim() !== "") yield parse(buffer)
}

const openAIUsage = (usage: { readonly prompt: number; readonly generated: number }) => ({
  prompt_tokens: usage.prompt,
  completion_tokens: usage.generated,
  total_tokens: usage.prompt + usage.generated
})

const finishReason = (stop: string) => (stop === "length" ? "length" : "stop")

/** Acme's lines as OpenAI chat-completion chunks: the text, the finish, the usage, then `[DONE]`. */
async function* framesOf(lines: AsyncIterable<AcmeLine>, envelope: object): AsyncGenerator<SseFrame> {
  const chunk = (fields: object) => ({ data: JSON.stringify({ ...envelope, object: "chat.completion.chunk", ...fields }) })
  yield chunk({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })
  let first = true
  for await (const line of lines) {
    if (line.type === "token") {
      yield chunk({ choices: [{ index: 0, delta: { content: first ? line.text : ` ${line.text}` }, finish_reason: null }] })
      first = false
    } else if (line.type === "done") {
      yield chunk({ choices: [{ index: 0, delta: {}, finish_reason: finishReason(line.stop) }] })
      yield chunk({ choices: [], usage: openAIUsage(line.usage) })
      yield { data: "[DONE]" }
      return
    }
  }
  throw failure("unavailable", "the vendor's answer ended early")
}

/** The whole answer, for a client that did not ask for a stream. */
const collect = async (lines: AsyncIterable<AcmeLine>) => {
  const said: Array<string> = []
  for await (const line of lines) {
    if (line.type === "token") said.push(line.text)
    if (line.type === "done") return { text: said.join(" "), stop: line.stop, usage: line.usage }
  }
  throw failure("unavailable", "the vendor's answer ended early")
}

const invoke = (call: ChatCall): Effect.Effect<ChatReply, PluginFailure> =>
  Effect.gen(function* () {
    const upstream = call.model.upstreams[0]
    if (upstream === undefined || call.http === undefined) {
      return yield* Effect.fail(failure("misconfigured", `model ${call.model.id} has no upstream this plugin can call`))
    }
    const response = yield* call.http.request({
      upstream,
      method: "POST",
      path: "/v1/generate",
      body: JSON.stringify({
        model: call.model.upstreamModel,
        messages: acmeMessages(call.request),
        max_new_tokens: outputCap(call.request, call.model)
      }),
      signal: call.signal
    })
    const lines = linesOf(response.chunks())
    const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const envelope = { id: `chatcmpl-acme-${call.requestId}`, created, model: call.model.upstreamModel }
    if (call.request.stream) return { _tag: "Events", dialect: "openai", events: framesOf(lines, envelope) } as const
    const answer = yield* Effect.tryPromise({
      try: () => collect(lines),
      catch: (error) => (isFailure(error) ? error : failure("unavailable", "the vendor's answer could not be read", String(error)))
    })
    return {
      _tag: "Body",
      dialect: "openai",
      body: {
        ...envelope,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: answer.text, refusal: null },
            logprobs: null,
            finish_reason: finishReason(answer.stop)
          }
        ],
        usage: openAIUsage(answer.usage)
      }
    } as const
  })

const plugin: ChatPlugin = {
  specificationVersion: "v1",
  id: "acme-chat",
  family: "acme",
  kind: "chat",
  pricingKeys: { allowed: ["input", "output"], required: ["input", "output"] },
  pricing,
  check,
  invoke
}

export default plugin
