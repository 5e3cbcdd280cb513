/**
 * A third-party Tollgate plugin, written only against the public contract: it serves chat models whose `plugin:` is
 * `echo` by repeating the last user message, word for word, in OpenAI's chat-completion dialect. The gateway converts
 * the reply for Anthropic and Gemini clients, places the hold from `estimate` and settles from `price(usage)`.
 *
 * It needs no upstream (the operator config still requires one to be named, see README.md) and is deterministic, which
 * makes it a fixture for the gateway's own tests as well as a template for real plugins.
 *
 * Runtime imports: `effect` only. Everything from Tollgate is a type, from `@tollgate/plugin-spec` (chat, v1).
 */
import { Clock, Effect } from "effect"
import type {
  ChatCall,
  ChatPlugin,
  ChatReply,
  ChatRequest,
  Micros,
  PluginFailure,
  PluginModel,
  SseFrame,
  Usage
} from "@tollgate/plugin-spec/chat"

export const ECHO_PLUGIN_ID = "echo"

// ---------------------------------------------------------------------------------------------------------------------
// Tokens: one word is one token. Crude, but deterministic and the same in `invoke` and in the tests.

const wordsOf = (text: string): ReadonlyArray<string> => text.split(/\s+/).filter((word) => word !== "")

type Part = ChatRequest["messages"][number]["content"][number]

const partText = (part: Part): string => {
  switch (part.type) {
    case "text":
    case "thinking":
      return part.text
    case "tool_call":
      return JSON.stringify(part.input)
    case "tool_result":
      return part.content.map((inner) => (inner.type === "text" ? inner.text : "")).join(" ")
    default:
      return ""
  }
}

/** Input tokens: every word of the system prompt and of every message. */
export const countInputTokens = (request: ChatRequest): number =>
  wordsOf(
    [...request.system.map((part) => part.text), ...request.messages.flatMap((m) => m.content.map(partText))].join(" ")
  ).length

/** The text of the last user message, or "" when there is none. */
export const lastUserText = (request: ChatRequest): string => {
  const last = [...request.messages].reverse().find((message) => message.role === "user")
  return last === undefined ? "" : last.content.map(partText).join(" ")
}

/** Most output tokens a call may produce: the request's `max_tokens`, never above the model's cap. */
export const outputCap = (request: ChatRequest, model: PluginModel): number =>
  Math.max(0, Math.min(request.maxTokens ?? model.maxOutputTokens, model.maxOutputTokens))

/** The reply: the last user message's words, cut at the output cap like a real model hitting `max_tokens`. */
export const echoReply = (
  request: ChatRequest,
  model: PluginModel
): { readonly words: ReadonlyArray<string>; readonly truncated: boolean } => {
  const words = wordsOf(lastUserText(request))
  const cap = outputCap(request, model)
  return { words: words.slice(0, cap), truncated: words.length > cap }
}

// ---------------------------------------------------------------------------------------------------------------------
// Pricing: a flat `perCall` plus `output` per 1M output tokens, in integer micro-dollars. Input is not billed.

const whole = (count: number): bigint => (Number.isFinite(count) && count > 0 ? BigInt(Math.ceil(count)) : 0n)

/** `units` at a price per million units, rounded up so a charge never undercounts. */
const perMillion = (units: number, price: Micros): Micros => (whole(units) * price + 999_999n) / 1_000_000n

const priceOf = (model: PluginModel, key: "perCall" | "output"): Micros => model.pricing[key] ?? 0n

export const echoPricing: ChatPlugin["pricing"] = {
  estimate: ({ request }, model) =>
    priceOf(model, "perCall") + perMillion(outputCap(request, model), priceOf(model, "output")),
  price: (usage: Usage, model) => priceOf(model, "perCall") + perMillion(usage.outputTokens, priceOf(model, "output"))
}

// ---------------------------------------------------------------------------------------------------------------------
// The reply, in OpenAI's chat-completion dialect.

const failure = (reason: PluginFailure["reason"], message: string): PluginFailure => ({
  _tag: "PluginFailure",
  reason,
  message
})

const openAIUsage = (inputTokens: number, outputTokens: number) => ({
  prompt_tokens: inputTokens,
  completion_tokens: outputTokens,
  total_tokens: inputTokens + outputTokens
})

/** Frames handed out one by one, and none once the gateway aborts the call (the client went away). */
const framesUntilAborted = (frames: ReadonlyArray<SseFrame>, signal: AbortSignal): AsyncIterable<SseFrame> => ({
  [Symbol.asyncIterator]: () => {
    let next = 0
    return {
      next: () =>
        Promise.resolve<IteratorResult<SseFrame>>(
          signal.aborted || next >= frames.length
            ? { done: true, value: undefined }
            : { done: false, value: frames[next++] }
        ),
      return: () => {
        next = frames.length
        return Promise.resolve<IteratorResult<SseFrame>>({ done: true, value: undefined })
      }
    }
  }
})

const invoke = (call: ChatCall): Effect.Effect<ChatReply, PluginFailure> =>
  Effect.gen(function* () {
    if (call.signal.aborted) return yield* Effect.fail(failure("cancelled", "the request was cancelled"))
    const { request, model } = call
    const { words, truncated } = echoReply(request, model)
    const text = words.join(" ")
    const inputTokens = countInputTokens(request)
    const finishReason = truncated ? "length" : "stop"
    const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const id = `chatcmpl-echo-${call.requestId}`
    const envelope = { id, created, model: model.upstreamModel }

    if (!request.stream) {
      const body = {
        ...envelope,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: text, refusal: null },
            logprobs: null,
            finish_reason: finishReason
          }
        ],
        usage: openAIUsage(inputTokens, words.length)
      }
      return { _tag: "Body", dialect: "openai", body } satisfies ChatReply
    }

    const chunk = (delta: Record<string, unknown>, finish: string | null = null): SseFrame => ({
      data: JSON.stringify({
        ...envelope,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
      })
    })
    const frames: ReadonlyArray<SseFrame> = [
      chunk({ role: "assistant", content: "" }),
      ...words.map((word, index) => chunk({ content: index === 0 ? word : ` ${word}` })),
      chunk({}, finishReason),
      // The gateway always needs the usage chunk to settle; it drops it for clients that did not ask for it.
      {
        data: JSON.stringify({
          ...envelope,
          object: "chat.completion.chunk",
          choices: [],
          usage: openAIUsage(inputTokens, words.length)
        })
      },
      { data: "[DONE]" }
    ]
    return { _tag: "Events", dialect: "openai", events: framesUntilAborted(frames, call.signal) } satisfies ChatReply
  })

export const echoPlugin: ChatPlugin = {
  specificationVersion: "v1",
  id: ECHO_PLUGIN_ID,
  family: "echo",
  kind: "chat",
  pricingKeys: { allowed: ["perCall", "output"], required: ["perCall"] },
  pricing: echoPricing,
  invoke
}

export default echoPlugin
