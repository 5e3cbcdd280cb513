/**
 * One streaming translation: upstream dialect events → IR → client dialect SSE frames, plus what billing needs when a
 * stream ends early (the usage and stop reason seen, and what was actually delivered to the client).
 *
 * The transducer is a plain stateful object: feed it parsed upstream events with `push`, call `end` at upstream EOF
 * (or `fail` when the upstream connection breaks), and write every returned string to the client as-is. After the
 * terminal frame (finish or error) it returns nothing more.
 */
import type { StopReason, Usage } from "./ChatIR.ts"
import type { ErrorKind, StreamEncoder, StreamEvent, StreamParser, UpstreamEvent } from "./ChatStream.ts"
import { makeAnthropicStreamEncoder, makeAnthropicStreamParser } from "./anthropicStream.ts"
import { makeGeminiStreamEncoder, makeGeminiStreamParser } from "./geminiStream.ts"
import type { ReasoningField } from "./openai.ts"
import { makeOpenAIStreamEncoder, makeOpenAIStreamParser } from "./openaiStream.ts"
import { makeResponsesStreamParser } from "./responsesStream.ts"
import { makeResponsesStreamEncoder } from "./responsesStreamEncoder.ts"
import { wantsEncrypted } from "./responsesResponse.ts"
import type { JsonRecord } from "./json.ts"
import type { Dialect } from "@tollgate/plugin-spec"

export type { Dialect }

export interface StreamTransducerOptions {
  readonly upstream: Dialect
  readonly client: Dialect
  /** Unix seconds for OpenAI chunks' `created`. */
  readonly created: number
  /** Message id used when the upstream gives none; also overrides the id sent to the client when `overrideId`. */
  readonly fallbackId: string
  /** Model name used when the upstream gives none. */
  readonly fallbackModel: string
  /** Send this model name to the client instead of the upstream's (e.g. the alias the client asked for). */
  readonly clientModel?: string
  /** Send this id to the client instead of the upstream's. */
  readonly clientId?: string
  /** OpenAI clients: the client's `stream_options.include_usage`. */
  readonly includeUsage?: boolean
  /** OpenAI clients: which field carries reasoning text. */
  readonly reasoningField?: ReasoningField
  /** Anthropic clients: the gateway's count of the prompt, for `message_start` when the upstream gives none there. */
  readonly inputTokens?: number
  /** Responses clients: their request, whose settings every Response object repeats. */
  readonly clientBody?: JsonRecord
  /**
   * The client is sent the upstream's own bytes (same protocol), so what `push` and `end` would return is not
   * written: the events are encoded only when something needs the encoder's state — `fail`'s in-band error, the
   * finished object in the snapshot — or when {@link DEFERRED_EVENTS} of them are waiting. The accounting is the same.
   */
  readonly deferEncoding?: boolean
}

/** How many events a deferring transducer keeps before it encodes them (and drops the frames): its memory bound. */
export const DEFERRED_EVENTS = 1024

export interface StreamSnapshot {
  /** Latest usage the upstream reported (cumulative); undefined if it never did. */
  readonly usage?: Usage
  readonly stopReason?: StopReason
  /** Upstream ended without its normal terminator (billing should estimate from `delivered`). */
  readonly truncated: boolean
  readonly finished: boolean
  readonly error?: { readonly kind: ErrorKind; readonly message: string }
  /** What reached the client, for estimating output tokens when usage is missing. */
  readonly delivered: { readonly text: string; readonly thinking: string; readonly toolArguments: string }
  /** Responses clients: the finished Response object, every item whole, once the stream ended in the client's dialect. */
  readonly final?: JsonRecord
}

export interface StreamTransducer {
  push(event: UpstreamEvent): ReadonlyArray<string>
  /** Upstream EOF: closes open blocks and finishes in the client's dialect. */
  end(): ReadonlyArray<string>
  /** Upstream failed mid-stream: emits the client dialect's in-band error. */
  fail(kind: ErrorKind, message: string): ReadonlyArray<string>
  snapshot(): StreamSnapshot
}

const parserFor = (options: StreamTransducerOptions): StreamParser => {
  const fallback = { id: options.fallbackId, model: options.fallbackModel }
  switch (options.upstream) {
    case "openai":
      return makeOpenAIStreamParser(fallback)
    case "anthropic":
      return makeAnthropicStreamParser(fallback)
    case "gemini":
      return makeGeminiStreamParser(fallback)
    case "responses":
      return makeResponsesStreamParser(fallback)
  }
}

const encoderFor = (
  options: StreamTransducerOptions
): StreamEncoder & { readonly final?: () => JsonRecord | undefined } => {
  const overrides = {
    ...(options.clientId !== undefined ? { id: options.clientId } : {}),
    ...(options.clientModel !== undefined ? { model: options.clientModel } : {})
  }
  switch (options.client) {
    case "openai":
      return makeOpenAIStreamEncoder({
        ...overrides,
        created: options.created,
        includeUsage: options.includeUsage ?? false,
        ...(options.reasoningField !== undefined ? { reasoningField: options.reasoningField } : {})
      })
    case "anthropic":
      return makeAnthropicStreamEncoder({
        ...overrides,
        ...(options.inputTokens !== undefined ? { inputTokens: options.inputTokens } : {})
      })
    case "gemini":
      return makeGeminiStreamEncoder(overrides)
    case "responses": {
      const body = options.clientBody ?? {}
      return makeResponsesStreamEncoder({
        identity: {
          id: options.clientId ?? options.fallbackId,
          model: options.clientModel ?? options.fallbackModel,
          createdAt: options.created
        },
        body,
        includeEncrypted: wantsEncrypted(body)
      })
    }
  }
}

export const makeStreamTransducer = (options: StreamTransducerOptions): StreamTransducer => {
  const parser = parserFor(options)
  const encoder = encoderFor(options)
  let usage: Usage | undefined
  let stopReason: StopReason | undefined
  let truncated = false
  let finished = false
  let error: { kind: ErrorKind; message: string } | undefined
  let text = ""
  let thinking = ""
  let toolArguments = ""
  /** Events accounted for but not yet given to the encoder (`deferEncoding`). */
  let deferred: Array<StreamEvent> = []

  const catchUp = () => {
    const waiting = deferred
    deferred = []
    for (const event of waiting) encoder.encode(event)
  }

  const emit = (events: ReadonlyArray<StreamEvent>, defer = options.deferEncoding === true): ReadonlyArray<string> => {
    if (!defer) catchUp()
    const frames: Array<string> = []
    for (const event of events) {
      if (finished) break
      switch (event.type) {
        case "message_start":
          if (event.usage) usage = event.usage
          break
        case "usage":
          usage = event.usage
          break
        case "text_delta":
          text += event.text
          break
        case "thinking_delta":
          thinking += event.text
          break
        case "tool_input_delta":
          toolArguments += event.json
          break
        case "message_end":
          if (event.usage) usage = event.usage
          stopReason = event.stopReason
          truncated = event.truncated
          finished = true
          break
        case "error":
          error = { kind: event.kind, message: event.message }
          finished = true
          break
      }
      if (defer) deferred.push(event)
      else frames.push(...encoder.encode(event))
    }
    if (deferred.length >= DEFERRED_EVENTS) catchUp()
    return frames
  }

  return {
    push: (event) => (finished ? [] : emit(parser.push(event))),
    end: () => (finished ? [] : emit(parser.end())),
    fail: (kind, message) => {
      if (finished) return []
      truncated = true
      return emit([{ type: "error", kind, message }], false)
    },
    snapshot: () => {
      if (encoder.final !== undefined) catchUp()
      return snapshotOf()
    }
  }

  function snapshotOf(): StreamSnapshot {
    return {
      ...(usage ? { usage } : {}),
      ...(stopReason !== undefined ? { stopReason } : {}),
      truncated: truncated || (finished && error !== undefined),
      finished,
      ...(error ? { error } : {}),
      delivered: { text, thinking, toolArguments },
      ...(encoder.final?.() === undefined ? {} : { final: encoder.final() })
    }
  }
}
