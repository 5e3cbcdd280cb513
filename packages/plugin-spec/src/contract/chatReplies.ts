/**
 * What a chat plugin's reply says, read the way the gateway reads it, in each of the wire dialects a plugin may answer
 * in: the text a client would see and the usage the call is billed by (the chat IR's convention: `inputTokens`
 * excludes cache reads and writes; `outputTokens` includes reasoning). A whole body or a stream of SSE events.
 */
import { Effect } from "effect"
import type { ChatReply, Usage } from "../chat.ts"
import type { Dialect, PluginFailure, SseFrame } from "../common.ts"
import { isPluginFailure } from "./engine.ts"

export interface ReadReply {
  readonly text: string
  /** Undefined when the reply reported none (a stream the gateway could then only bill by counting). */
  readonly usage: Usage | undefined
}

type Json = Readonly<Record<string, unknown>>

const isRecord = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)
const record = (value: unknown): Json => (isRecord(value) ? value : {})
const list = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
const count = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) ? value : 0)
const text = (value: unknown): string => (typeof value === "string" ? value : "")

const usage = (input: number, output: number, cacheRead: number, cacheWrite: number, reasoning: number): Usage => ({
  inputTokens: input,
  outputTokens: output,
  cacheReadTokens: cacheRead,
  cacheWriteTokens: cacheWrite,
  reasoningTokens: reasoning
})

/** OpenAI's usage (chat completions or Responses): its prompt count includes cached tokens. */
const openAIUsage = (value: unknown, prompt: string, completion: string): Usage | undefined => {
  if (!isRecord(value)) return undefined
  const cached = count(record(value[`${prompt}_details`]).cached_tokens)
  const reasoning = count(record(value[`${completion}_details`]).reasoning_tokens)
  return usage(count(value[prompt]) - cached, count(value[completion]), cached, 0, reasoning)
}

const anthropicUsage = (value: unknown, base?: Usage): Usage | undefined => {
  if (!isRecord(value)) return base
  const pick = (key: string, fallback: number) => (typeof value[key] === "number" ? count(value[key]) : fallback)
  return usage(
    pick("input_tokens", base?.inputTokens ?? 0),
    pick("output_tokens", base?.outputTokens ?? 0),
    pick("cache_read_input_tokens", base?.cacheReadTokens ?? 0),
    pick("cache_creation_input_tokens", base?.cacheWriteTokens ?? 0),
    0
  )
}

const geminiUsage = (value: unknown): Usage | undefined => {
  if (!isRecord(value)) return undefined
  const cached = count(value.cachedContentTokenCount)
  const thoughts = count(value.thoughtsTokenCount)
  return usage(count(value.promptTokenCount) - cached, count(value.candidatesTokenCount) + thoughts, cached, 0, thoughts)
}

const geminiText = (body: Json): string =>
  list(record(list(body.candidates)[0]).content === undefined ? [] : record(record(list(body.candidates)[0]).content).parts)
    .map((part) => (record(part).thought === true ? "" : text(record(part).text)))
    .join("")

/** A whole body in its dialect. */
export const readBody = (dialect: Dialect, body: unknown): ReadReply => {
  const value = record(body)
  switch (dialect) {
    case "openai":
      return {
        text: text(record(record(list(value.choices)[0]).message).content),
        usage: openAIUsage(value.usage, "prompt_tokens", "completion_tokens")
      }
    case "anthropic":
      return {
        text: list(value.content)
          .map((block) => (record(block).type === "text" ? text(record(block).text) : ""))
          .join(""),
        usage: anthropicUsage(value.usage)
      }
    case "gemini":
      return { text: geminiText(value), usage: geminiUsage(value.usageMetadata) }
    case "responses":
      return {
        text: list(value.output)
          .flatMap((item) => (record(item).type === "message" ? list(record(item).content) : []))
          .map((part) => (record(part).type === "output_text" ? text(record(part).text) : ""))
          .join(""),
        usage: openAIUsage(value.usage, "input_tokens", "output_tokens")
      }
  }
}

/** Folds one event of a stream into what was read so far. */
const readEvent = (dialect: Dialect, read: ReadReply, frame: SseFrame): ReadReply => {
  if (frame.data === "[DONE]") return read
  const data = record(JSON.parse(frame.data))
  switch (dialect) {
    case "openai": {
      const delta = text(record(record(list(data.choices)[0]).delta).content)
      const reported = openAIUsage(data.usage, "prompt_tokens", "completion_tokens")
      return { text: read.text + delta, usage: reported ?? read.usage }
    }
    case "anthropic": {
      const type = data.type ?? frame.event
      if (type === "message_start") return { ...read, usage: anthropicUsage(record(data.message).usage, read.usage) }
      if (type === "message_delta") return { ...read, usage: anthropicUsage(data.usage, read.usage) }
      const delta = record(data.delta)
      return type === "content_block_delta" && delta.type === "text_delta" ? { ...read, text: read.text + text(delta.text) } : read
    }
    case "gemini":
      return { text: read.text + geminiText(data), usage: geminiUsage(data.usageMetadata) ?? read.usage }
    case "responses": {
      const type = data.type ?? frame.event
      if (type === "response.output_text.delta") return { ...read, text: read.text + text(data.delta) }
      if (type === "response.completed") {
        return { ...read, usage: openAIUsage(record(data.response).usage, "input_tokens", "output_tokens") ?? read.usage }
      }
      return read
    }
  }
}

/** Reads every event; a rejection that is a PluginFailure fails the read with it, anything else is a defect. */
const readEvents = (dialect: Dialect, events: AsyncIterable<SseFrame>): Effect.Effect<ReadReply, PluginFailure> =>
  Effect.flatMap(
    Effect.promise(async () => {
      let read: ReadReply = { text: "", usage: undefined }
      try {
        for await (const frame of events) read = readEvent(dialect, read, frame)
      } catch (error) {
        return { error }
      }
      return { read }
    }),
    (outcome: { readonly read?: ReadReply; readonly error?: unknown }) =>
      outcome.read !== undefined
        ? Effect.succeed(outcome.read)
        : isPluginFailure(outcome.error)
          ? Effect.fail(outcome.error)
          : Effect.die(outcome.error)
  )

/**
 * The reply read whole. A streamed request must be answered with events and a whole one with a body (the gateway
 * relays what it is given to a client that asked for the other): anything else is a defect of the plugin.
 */
export const readChatReply = (reply: ChatReply, streamed: boolean): Effect.Effect<ReadReply, PluginFailure> => {
  if (!isRecord(reply) || (reply._tag !== "Body" && reply._tag !== "Events")) {
    return Effect.die(`the reply is neither { _tag: "Body" } nor { _tag: "Events" }: ${String(reply)}`)
  }
  if (streamed !== (reply._tag === "Events")) {
    return Effect.die(
      streamed ? "a streamed request was answered with a whole body" : "a whole request was answered with events"
    )
  }
  return reply._tag === "Body"
    ? Effect.sync(() => readBody(reply.dialect, reply.body))
    : readEvents(reply.dialect, reply.events)
}
