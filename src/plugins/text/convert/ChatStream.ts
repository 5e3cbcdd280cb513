/**
 * Streaming IR. Upstream parsers turn vendor events into these; client encoders turn these into SSE frames.
 *
 * Parsers guarantee a well-formed sequence, so encoders stay simple: exactly one `message_start` first; blocks numbered
 * 0, 1, 2… opened one at a time and closed before the next opens; a tool block always carries at least one
 * `tool_input_delta` (`"{}"` when the upstream sent no arguments); then exactly one `message_end`, or one `error`
 * anywhere, after which nothing follows. `usage` events carry the latest cumulative usage and may appear anywhere
 * before the end (encoders may ignore them; billing reads them when a stream is cut).
 */
import type { StopReason, Usage, WebSearch } from "./ChatIR.ts"

/** One upstream SSE event: its `event:` name, if any, and its `data:` already parsed (or the raw text, e.g. `[DONE]`). */
export interface UpstreamEvent {
  readonly event?: string
  readonly data: unknown
}

export type StreamBlock =
  | { readonly type: "text" }
  | { readonly type: "thinking" }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly signature?: string }
  | { readonly type: "redacted_thinking"; readonly data: string }

/** Vendor-neutral error classes; each client encoder maps them to its dialect's error type. */
export type ErrorKind =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "rate_limit"
  | "billing"
  | "overloaded"
  | "timeout"
  | "api_error"

export type StreamEvent =
  | { readonly type: "message_start"; readonly id: string; readonly model: string; readonly usage?: Usage }
  | { readonly type: "block_start"; readonly index: number; readonly block: StreamBlock }
  | { readonly type: "text_delta"; readonly index: number; readonly text: string }
  | { readonly type: "thinking_delta"; readonly index: number; readonly text: string }
  | {
      readonly type: "signature_delta"
      readonly index: number
      readonly signature: string
      /** Who issued it; the Anthropic encoder wraps a Gemini one so that it is never replayed to Anthropic. */
      readonly origin: "anthropic" | "gemini" | "openai"
    }
  | { readonly type: "tool_input_delta"; readonly index: number; readonly json: string }
  | { readonly type: "block_stop"; readonly index: number }
  | { readonly type: "usage"; readonly usage: Usage }
  /** A hosted web search the vendor ran, whole (between blocks: never inside one). */
  | { readonly type: "web_search"; readonly search: WebSearch }
  | {
      readonly type: "message_end"
      readonly stopReason: StopReason
      readonly stopSequence?: string
      /** Undefined when the upstream never reported usage (stream cut, or usage not requested). */
      readonly usage?: Usage
      /** The upstream ended without its normal terminator. */
      readonly truncated: boolean
    }
  | { readonly type: "error"; readonly kind: ErrorKind; readonly message: string }

export interface StreamParser {
  push(event: UpstreamEvent): ReadonlyArray<StreamEvent>
  /** Upstream EOF. */
  end(): ReadonlyArray<StreamEvent>
}

export interface StreamEncoder {
  encode(event: StreamEvent): ReadonlyArray<string>
}

export interface Fallback {
  /** Message id to use when the upstream gives none. */
  readonly id: string
  readonly model: string
}

type OpenBlock = { readonly index: number; readonly kind: StreamBlock["type"]; toolInputs: number }

/**
 * Enforces the stream invariants for a parser. Parsers push into `out` through these methods and drain it per event.
 * The `ensure*` methods open a block of the wanted kind (closing another); the `delta*` methods only write into an
 * already open block of the matching kind and drop anything else.
 */
export const makeSequencer = (fallback: Fallback) => {
  let out: Array<StreamEvent> = []
  let started = false
  let done = false
  let nextIndex = 0
  let open: OpenBlock | undefined

  const start = (id: string | undefined, model: string | undefined, usage?: Usage) => {
    if (started || done) return
    started = true
    out.push({
      type: "message_start",
      id: id || fallback.id,
      model: model || fallback.model,
      ...(usage ? { usage } : {})
    })
  }
  const close = () => {
    if (open === undefined) return
    if (open.kind === "tool_use" && open.toolInputs === 0)
      out.push({ type: "tool_input_delta", index: open.index, json: "{}" })
    out.push({ type: "block_stop", index: open.index })
    open = undefined
  }
  const openBlock = (block: StreamBlock): number => {
    start(undefined, undefined)
    close()
    open = { index: nextIndex++, kind: block.type, toolInputs: 0 }
    out.push({ type: "block_start", index: open.index, block })
    return open.index
  }
  const deltaText = (text: string) => {
    if (!done && open?.kind === "text" && text !== "") out.push({ type: "text_delta", index: open.index, text })
  }
  const deltaThinking = (text: string) => {
    if (!done && open?.kind === "thinking" && text !== "") out.push({ type: "thinking_delta", index: open.index, text })
  }
  const deltaSignature = (signature: string, origin: "anthropic" | "gemini" | "openai" = "anthropic") => {
    if (!done && open?.kind === "thinking" && signature !== "") {
      out.push({ type: "signature_delta", index: open.index, signature, origin })
    }
  }
  const deltaToolInput = (json: string) => {
    if (!done && open?.kind === "tool_use" && json !== "") {
      open.toolInputs++
      out.push({ type: "tool_input_delta", index: open.index, json })
    }
  }
  return {
    get done() {
      return done
    },
    get openKind(): StreamBlock["type"] | undefined {
      return open?.kind
    },
    start,
    close,
    openBlock: (block: StreamBlock): number | undefined => (done ? undefined : openBlock(block)),
    deltaText,
    deltaThinking,
    deltaSignature,
    deltaToolInput,
    ensureText: (text: string) => {
      if (done || text === "") return
      if (open?.kind !== "text") openBlock({ type: "text" })
      deltaText(text)
    },
    ensureThinking: (text: string) => {
      if (done || text === "") return
      if (open?.kind !== "thinking") openBlock({ type: "thinking" })
      deltaThinking(text)
    },
    usage: (usage: Usage) => {
      if (!done) out.push({ type: "usage", usage })
    },
    webSearch: (search: WebSearch) => {
      if (done) return
      start(undefined, undefined)
      close()
      out.push({ type: "web_search", search })
    },
    finish: (end: { stopReason: StopReason; stopSequence?: string; usage?: Usage; truncated: boolean }) => {
      if (done) return
      start(undefined, undefined)
      close()
      done = true
      out.push({ type: "message_end", ...end })
    },
    error: (kind: ErrorKind, message: string) => {
      if (done) return
      done = true
      out.push({ type: "error", kind, message })
    },
    drain: (): ReadonlyArray<StreamEvent> => {
      const drained = out
      out = []
      return drained
    }
  }
}

export const sseData = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`

export const sseEvent = (name: string, payload: unknown): string =>
  `event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`
