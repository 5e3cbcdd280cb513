/**
 * Anthropic Messages stream events ↔ streaming IR.
 *
 * Lossy cases:
 * - Parser: a web search (`server_tool_use` then its `web_search_tool_result`) becomes one `web_search` event; other
 *   server-tool blocks and `citations_delta` are dropped;
 *   `ping` is dropped (the HTTP layer sends its own keepalives); block indexes are renumbered densely.
 * - Encoder: `message_start` reports the upstream's input usage, or, when the upstream reports none before its end
 *   (OpenAI, Gemini), the gateway's own count of the prompt: clients such as LangChain's ChatAnthropic read the input
 *   tokens there only. The final `message_delta` repeats the input count (cumulative usage, the SDK overwrites its
 *   snapshot field by field), the upstream's real one when it gave one. Thinking blocks that end without an upstream signature get
 *   a synthetic `gw1.` signature. Tool-call ids are sanitized to `^[a-zA-Z0-9_-]+$`.
 */
import type { Usage } from "./ChatIR.ts"
import { emptyUsage } from "./ChatIR.ts"
import { anthropicUsageToIR, cacheCreationOf, stopReasonToAnthropic } from "./anthropic.ts"
import {
  type ErrorKind,
  type Fallback,
  makeSequencer,
  sseEvent,
  type StreamEncoder,
  type StreamEvent,
  type StreamParser,
  type UpstreamEvent
} from "./ChatStream.ts"
import { asRecord, asString, isRecord, type JsonRecord } from "./json.ts"
import { queryOf, webSearchOf } from "./anthropicWebSearch.ts"
import { clientSignature, packToolId, syntheticSignature } from "./thinkingSignature.ts"
import { restoreToolId, sanitizeToolId } from "./toolId.ts"

const ANTHROPIC_ERROR_KINDS: Readonly<Record<string, ErrorKind>> = {
  invalid_request_error: "invalid_request",
  request_too_large: "invalid_request",
  authentication_error: "authentication",
  permission_error: "permission",
  not_found_error: "not_found",
  rate_limit_error: "rate_limit",
  billing_error: "billing",
  overloaded_error: "overloaded",
  timeout_error: "timeout",
  api_error: "api_error"
}

export const anthropicErrorKind = (type: unknown): ErrorKind =>
  (typeof type === "string" ? ANTHROPIC_ERROR_KINDS[type] : undefined) ?? "api_error"

export const anthropicErrorType = (kind: ErrorKind): string =>
  kind === "api_error" ? "api_error" : kind === "billing" ? "billing_error" : `${kind}_error`

const oneHourOf = (tokens: number | undefined) => (tokens === undefined ? {} : { cacheWrite1hTokens: tokens })

/** `message_delta.usage` overwrites only the fields it carries. */
const mergeUsage = (usage: Usage, raw: JsonRecord): Usage => {
  const next = anthropicUsageToIR(raw)
  const has = (key: string) => typeof raw[key] === "number"
  return {
    inputTokens: has("input_tokens") ? next.inputTokens : usage.inputTokens,
    outputTokens: has("output_tokens") ? next.outputTokens : usage.outputTokens,
    cacheReadTokens: has("cache_read_input_tokens") ? next.cacheReadTokens : usage.cacheReadTokens,
    cacheWriteTokens: has("cache_creation_input_tokens") ? next.cacheWriteTokens : usage.cacheWriteTokens,
    // `message_delta` repeats the cache counts without their 1-hour split: the split message_start gave stands.
    ...oneHourOf(isRecord(raw.cache_creation) ? next.cacheWrite1hTokens : usage.cacheWrite1hTokens),
    reasoningTokens: isRecord(raw.output_tokens_details) ? next.reasoningTokens : usage.reasoningTokens,
    ...((isRecord(raw.server_tool_use) ? next : usage).webSearches === undefined
      ? {}
      : { webSearches: (isRecord(raw.server_tool_use) ? next : usage).webSearches })
  }
}

export const makeAnthropicStreamParser = (fallback: Fallback): StreamParser => {
  const seq = makeSequencer(fallback)
  let usage: Usage | undefined
  let stopReason: string | undefined
  let stopSequence: string | undefined
  let openUpstreamIndex: unknown
  /** Web searches asked for (`server_tool_use` blocks, by upstream index): their id and streamed input. */
  const searching = new Map<unknown, { readonly id: string; json: string }>()
  /** Each search's query, by its id, for the result block that answers it. */
  const queries = new Map<string, string>()

  const finalize = (truncated: boolean) =>
    seq.finish({
      stopReason: stopReason ?? "end_turn",
      ...(stopSequence !== undefined ? { stopSequence } : {}),
      ...(usage ? { usage } : {}),
      truncated
    })

  const onBlockStart = (data: JsonRecord) => {
    const block = asRecord(data.content_block)
    openUpstreamIndex = undefined
    switch (block.type) {
      case "text":
        seq.openBlock({ type: "text" })
        seq.deltaText(asString(block.text) ?? "")
        break
      case "thinking":
        seq.openBlock({ type: "thinking" })
        seq.deltaThinking(asString(block.thinking) ?? "")
        seq.deltaSignature(asString(block.signature) ?? "")
        break
      case "redacted_thinking":
        seq.openBlock({ type: "redacted_thinking", data: asString(block.data) ?? "" })
        break
      case "tool_use": {
        seq.openBlock({
          type: "tool_use",
          id: restoreToolId(asString(block.id) ?? ""),
          name: asString(block.name) ?? ""
        })
        const input = asRecord(block.input)
        if (Object.keys(input).length > 0) seq.deltaToolInput(JSON.stringify(input))
        break
      }
      case "server_tool_use":
        seq.close()
        if (typeof block.id === "string") {
          queries.set(block.id, queryOf(block.input))
          searching.set(data.index, { id: block.id, json: "" })
        }
        return
      case "web_search_tool_result":
        seq.close()
        seq.webSearch(webSearchOf(block, queries.get(asString(block.tool_use_id) ?? "") ?? ""))
        return
      default:
        // A block we cannot represent: close whatever is open and ignore its deltas.
        seq.close()
        return
    }
    openUpstreamIndex = data.index
  }

  const onBlockDelta = (data: JsonRecord) => {
    const delta = asRecord(data.delta)
    const search = searching.get(data.index)
    if (search !== undefined && delta.type === "input_json_delta") {
      search.json += asString(delta.partial_json) ?? ""
      queries.set(search.id, queryOf(search.json))
    }
    if (data.index !== openUpstreamIndex) return
    switch (delta.type) {
      case "text_delta":
        seq.deltaText(asString(delta.text) ?? "")
        break
      case "thinking_delta":
        seq.deltaThinking(asString(delta.thinking) ?? "")
        break
      case "signature_delta":
        seq.deltaSignature(asString(delta.signature) ?? "")
        break
      case "input_json_delta":
        seq.deltaToolInput(asString(delta.partial_json) ?? "")
        break
    }
  }

  return {
    push: (event: UpstreamEvent) => {
      if (seq.done || !isRecord(event.data)) return []
      const data = event.data
      const name = event.event ?? asString(data.type)
      if (name === "error") {
        const error = asRecord(data.error)
        seq.error(anthropicErrorKind(error.type), asString(error.message) ?? "upstream error")
        return seq.drain()
      }
      if (name === "ping") return []
      if (name === "message_start") {
        const message = asRecord(data.message)
        usage = anthropicUsageToIR(message.usage)
        seq.start(asString(message.id), asString(message.model), usage)
        return seq.drain()
      }
      seq.start(undefined, undefined)
      switch (name) {
        case "content_block_start":
          onBlockStart(data)
          break
        case "content_block_delta":
          onBlockDelta(data)
          break
        case "content_block_stop":
          if (data.index === openUpstreamIndex) {
            seq.close()
            openUpstreamIndex = undefined
          }
          break
        case "message_delta": {
          const delta = asRecord(data.delta)
          stopReason = asString(delta.stop_reason) ?? stopReason
          stopSequence = asString(delta.stop_sequence) ?? stopSequence
          if (isRecord(data.usage)) {
            usage = mergeUsage(usage ?? emptyUsage, data.usage)
            seq.usage(usage)
          }
          break
        }
        case "message_stop":
          finalize(false)
          break
      }
      return seq.drain()
    },
    end: () => {
      finalize(true)
      return seq.drain()
    }
  }
}

export interface AnthropicStreamEncoderOptions {
  /** Overrides the upstream message id. */
  readonly id?: string
  /** Overrides the upstream model name. */
  readonly model?: string
  /** The gateway's count of the prompt, for `message_start` when the upstream has not reported its own yet. */
  readonly inputTokens?: number
}

/** Cumulative usage as `message_start`/`message_delta` carry it (the SDK overwrites its snapshot field by field). */
const streamUsage = (usage: Usage): JsonRecord => ({
  input_tokens: usage.inputTokens,
  cache_creation_input_tokens: usage.cacheWriteTokens,
  cache_read_input_tokens: usage.cacheReadTokens,
  cache_creation: cacheCreationOf(usage),
  output_tokens: usage.outputTokens
})

export const makeAnthropicStreamEncoder = (options: AnthropicStreamEncoderOptions = {}): StreamEncoder => {
  const clientIndex = new Map<number, number>()
  let thinking: { text: string; signed: boolean } | undefined
  // What message_start said, so a stream ending without the upstream's usage does not take the input count back to 0.
  let startUsage: Usage = { ...emptyUsage, inputTokens: options.inputTokens ?? 0 }
  const at = (index: number) => clientIndex.get(index) ?? index
  const delta = (index: number, payload: JsonRecord) =>
    sseEvent("content_block_delta", { type: "content_block_delta", index: at(index), delta: payload })
  const messageStart = (event: Extract<StreamEvent, { readonly type: "message_start" }>): ReadonlyArray<string> => {
    if (event.usage !== undefined) startUsage = event.usage
    const message = {
      id: options.id ?? event.id,
      type: "message",
      role: "assistant",
      model: options.model ?? event.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: streamUsage(startUsage)
    }
    return [sseEvent("message_start", { type: "message_start", message })]
  }
  /** A block at the client's next index (a dropped upstream block leaves no gap), as Anthropic starts it. */
  const blockStart = (event: Extract<StreamEvent, { readonly type: "block_start" }>): ReadonlyArray<string> => {
    const index = clientIndex.size
    clientIndex.set(event.index, index)
    const block = event.block
    thinking = block.type === "thinking" ? { text: "", signed: false } : undefined
    const contentBlock =
      block.type === "text"
        ? { type: "text", text: "" }
        : block.type === "thinking"
          ? { type: "thinking", thinking: "", signature: "" }
          : block.type === "tool_use"
            ? {
                type: "tool_use",
                id: sanitizeToolId(packToolId(block.id, block.signature)),
                name: block.name,
                input: {}
              }
            : { type: "redacted_thinking", data: block.data }
    return [sseEvent("content_block_start", { type: "content_block_start", index, content_block: contentBlock })]
  }
  return {
    encode: (event) => {
      switch (event.type) {
        case "message_start":
          return messageStart(event)
        case "block_start":
          return blockStart(event)
        case "text_delta":
          return [delta(event.index, { type: "text_delta", text: event.text })]
        case "thinking_delta":
          if (thinking) thinking.text += event.text
          return [delta(event.index, { type: "thinking_delta", thinking: event.text })]
        case "signature_delta":
          if (thinking) thinking.signed = true
          return [
            delta(event.index, { type: "signature_delta", signature: clientSignature(event.signature, event.origin) })
          ]
        case "tool_input_delta":
          return [delta(event.index, { type: "input_json_delta", partial_json: event.json })]
        case "block_stop": {
          const frames: Array<string> = []
          if (thinking && !thinking.signed) {
            frames.push(delta(event.index, { type: "signature_delta", signature: syntheticSignature(thinking.text) }))
          }
          thinking = undefined
          frames.push(sseEvent("content_block_stop", { type: "content_block_stop", index: at(event.index) }))
          return frames
        }
        case "message_end": {
          return [
            sseEvent("message_delta", {
              type: "message_delta",
              delta: {
                stop_reason: stopReasonToAnthropic(event.stopReason),
                stop_sequence: event.stopSequence ?? null
              },
              usage: streamUsage(event.usage ?? startUsage)
            }),
            sseEvent("message_stop", { type: "message_stop" })
          ]
        }
        case "error":
          return [
            sseEvent("error", {
              type: "error",
              error: { type: anthropicErrorType(event.kind), message: event.message }
            })
          ]
        default:
          return []
      }
    }
  }
}
