/**
 * OpenAI chat-completion chunks ↔ streaming IR.
 *
 * Lossy cases:
 * - Parser: only choice index 0 is read; `logprobs`, `refusal` deltas, `obfuscation` are dropped. Tool-call argument
 *   fragments for several calls that interleave are buffered and replayed one call after the other (clients assume one
 *   open block); fragments for a call whose block was already closed by later text are dropped. A call that never got
 *   a name is emitted with name "" and, without an id, with `call_<n>`.
 * - Encoder: thinking signatures and redacted thinking are dropped; usage is only sent when the client asked
 *   `stream_options.include_usage`; in-band errors end the stream without `[DONE]` (openai-node throws on them).
 *   Ids are `chatcmpl-` ids (another vendor's id behind the prefix). The role rides on the first delta of substance:
 *   `content: ""` before text as OpenAI sends it, `content: null` with a first tool call or reasoning, since the AI
 *   SDK opens a text part for any string content.
 */
import type { Usage } from "./ChatIR.ts"
import { emptyUsage } from "./ChatIR.ts"
import {
  type ErrorKind,
  type Fallback,
  makeSequencer,
  sseData,
  type StreamEncoder,
  type StreamParser,
  type UpstreamEvent
} from "./ChatStream.ts"
import { asArray, asRecord, asString, isRecord, type JsonRecord, parseJson } from "./json.ts"
import { packToolId } from "./thinkingSignature.ts"
import {
  irUsageToOpenAI,
  openAIFinishToStopReason,
  openAIUsageToIR,
  type ReasoningField,
  stopReasonToOpenAIFinish
} from "./openai.ts"
import { chatCompletionId } from "./openaiResponse.ts"

export const openAIErrorKind = (error: JsonRecord): ErrorKind => {
  const type = asString(error.type)
  const code = asString(error.code)
  if (code === "insufficient_quota" || type === "insufficient_quota") return "billing"
  if (code === "rate_limit_exceeded" || type === "requests" || type === "tokens") return "rate_limit"
  if (code === "invalid_api_key" || type === "authentication_error") return "authentication"
  if (code === "model_not_found") return "not_found"
  switch (type) {
    case "invalid_request_error":
      return "invalid_request"
    case "permission_error":
      return "permission"
    case "service_unavailable_error":
      return "overloaded"
    default:
      return "api_error"
  }
}

const openAIErrorBody = (kind: ErrorKind, message: string): JsonRecord => {
  const [type, code]: readonly [string, string | null] =
    kind === "invalid_request"
      ? ["invalid_request_error", null]
      : kind === "authentication"
        ? ["invalid_request_error", "invalid_api_key"]
        : kind === "permission"
          ? ["permission_error", null]
          : kind === "not_found"
            ? ["invalid_request_error", "model_not_found"]
            : kind === "rate_limit"
              ? ["requests", "rate_limit_exceeded"]
              : kind === "billing"
                ? ["insufficient_quota", "insufficient_quota"]
                : kind === "overloaded"
                  ? ["service_unavailable_error", null]
                  : kind === "timeout"
                    ? ["timeout_error", null]
                    : ["server_error", null]
  return { error: { message, type, param: null, code } }
}

interface PendingCall {
  id?: string
  name?: string
  /** Fragments received while the call could not be opened yet. */
  args: string
  /** Fragments already delivered, to tell whether the call's arguments are complete. */
  emitted: string
  state: "pending" | "open" | "closed"
}

export const makeOpenAIStreamParser = (fallback: Fallback): StreamParser => {
  const seq = makeSequencer(fallback)
  const calls = new Map<string, PendingCall>()
  const order: Array<PendingCall> = []
  let current: PendingCall | undefined
  let lastKey: string | undefined
  let finishReason: unknown
  let usage: Usage | undefined
  let sawToolCalls = false

  const closeCurrent = () => {
    if (current !== undefined) current.state = "closed"
    current = undefined
    seq.close()
  }
  const startCall = (call: PendingCall, position: number) => {
    closeCurrent()
    seq.openBlock({ type: "tool_use", id: call.id ?? `call_${position}`, name: call.name ?? "" })
    call.state = "open"
    current = call
    deliver(call, call.args)
    call.args = ""
  }
  const deliver = (call: PendingCall, fragment: string) => {
    seq.deltaToolInput(fragment)
    call.emitted += fragment
  }
  const isComplete = (call: PendingCall) => call.emitted !== "" && parseJson(call.emitted) !== undefined
  const isReady = (call: PendingCall) => call.state === "pending" && call.id !== undefined && call.name !== undefined
  /** Sequential vendors finish one call before the next starts: switch as soon as the open call's JSON is whole. */
  const advance = () => {
    if (current !== undefined && !isComplete(current)) return
    const next = order.find(isReady)
    if (next !== undefined) startCall(next, order.indexOf(next))
  }
  const onText = (text: string, kind: "text" | "thinking") => {
    if (text === "") return
    if (current !== undefined && seq.openKind === "tool_use") closeCurrent()
    if (kind === "text") seq.ensureText(text)
    else seq.ensureThinking(text)
  }
  const onToolCall = (raw: unknown) => {
    const call = asRecord(raw)
    const fn = asRecord(call.function)
    const id = asString(call.id)
    let key = typeof call.index === "number" ? `i${call.index}` : id !== undefined ? `d${id}` : (lastKey ?? "i0")
    let entry = calls.get(key)
    // Some vendors reuse index 0 for every call; a different id on a known index is a new call.
    if (entry?.id !== undefined && id !== undefined && id !== "" && entry.id !== id) {
      key = `${key}#${order.length}`
      entry = undefined
    }
    if (entry === undefined) {
      entry = { args: "", emitted: "", state: "pending" }
      calls.set(key, entry)
      if (typeof call.index === "number") calls.set(`i${call.index}`, entry)
      order.push(entry)
    }
    lastKey = key
    sawToolCalls = true
    if (entry.id === undefined && id !== undefined && id !== "") entry.id = id
    if (entry.name === undefined && asString(fn.name) !== undefined && fn.name !== "") entry.name = asString(fn.name)
    const fragment = asString(fn.arguments) ?? ""
    if (entry.state === "closed") return
    if (entry.state === "open") deliver(entry, fragment)
    else entry.args += fragment
    advance()
  }
  const finalize = (truncated: boolean) => {
    if (seq.done) return
    closeCurrent()
    order.forEach((call, position) => {
      if (call.state !== "pending") return
      startCall(call, position)
      closeCurrent()
    })
    seq.finish({
      stopReason: openAIFinishToStopReason(finishReason, sawToolCalls),
      ...(usage ? { usage } : {}),
      truncated
    })
  }

  return {
    push: (event: UpstreamEvent) => {
      if (seq.done) return []
      const data = event.data
      if (data === "[DONE]") {
        finalize(finishReason === undefined || finishReason === null)
        return seq.drain()
      }
      if (!isRecord(data)) return []
      if (event.event === "error" || data.error !== undefined) {
        // Some compatible servers send `{"error": "text"}` instead of the object envelope.
        const error = asRecord(data.error ?? data)
        seq.error(openAIErrorKind(error), asString(error.message) ?? asString(data.error) ?? "upstream error")
        return seq.drain()
      }
      seq.start(asString(data.id), asString(data.model))
      const choices = asArray(data.choices)
      const choice = choices.find((c) => asRecord(c).index === 0 || asRecord(c).index === undefined)
      if (isRecord(choice)) {
        const delta = asRecord(choice.delta)
        onText(asString(delta.reasoning) ?? asString(delta.reasoning_content) ?? "", "thinking")
        onText(asString(delta.content) ?? "", "text")
        for (const call of asArray(delta.tool_calls)) onToolCall(call)
        if (choice.finish_reason !== null && choice.finish_reason !== undefined) finishReason = choice.finish_reason
      }
      if (isRecord(data.usage)) {
        usage = openAIUsageToIR(data.usage)
        seq.usage(usage)
        if (choices.length === 0) finalize(false)
      }
      return seq.drain()
    },
    end: () => {
      finalize(finishReason === undefined || finishReason === null)
      return seq.drain()
    }
  }
}

export interface OpenAIStreamEncoderOptions {
  /** Unix seconds, the same on every chunk. */
  readonly created: number
  /** Overrides the upstream message id (e.g. a `chatcmpl-` id). */
  readonly id?: string
  /** Overrides the upstream model name (e.g. the alias the client asked for). */
  readonly model?: string
  /** The client's `stream_options.include_usage`. */
  readonly includeUsage: boolean
  readonly reasoningField?: ReasoningField
}

export const makeOpenAIStreamEncoder = (options: OpenAIStreamEncoderOptions): StreamEncoder => {
  const reasoningField = options.reasoningField ?? "reasoning_content"
  let id = options.id ?? ""
  let model = options.model ?? ""
  const toolIndex = new Map<number, number>()
  const envelope = (choices: ReadonlyArray<JsonRecord>, usage: JsonRecord | null): string =>
    sseData({
      id,
      object: "chat.completion.chunk",
      created: options.created,
      model,
      choices,
      ...(options.includeUsage ? { usage } : {})
    })
  const chunk = (delta: JsonRecord, finishReason: string | null = null): string =>
    envelope([{ index: 0, delta, logprobs: null, finish_reason: finishReason }], null)
  // The role goes on the first delta of substance, as OpenAI sends it: `content: ""` before text, `content: null`
  // before a tool call or reasoning (the AI SDK turns any string content, even "", into a text part).
  let opened = false
  const opening = (content: "" | null): JsonRecord => {
    if (opened) return {}
    opened = true
    return { role: "assistant", content }
  }
  const textOpening = (): ReadonlyArray<string> => (opened ? [] : [chunk(opening(""))])
  return {
    encode: (event) => {
      switch (event.type) {
        case "message_start":
          id = options.id ?? chatCompletionId(event.id)
          model = options.model ?? event.model
          return []
        case "block_start": {
          if (event.block.type !== "tool_use") return []
          const n = toolIndex.size
          toolIndex.set(event.index, n)
          const call = {
            index: n,
            id: packToolId(event.block.id, event.block.signature),
            type: "function",
            function: { name: event.block.name, arguments: "" }
          }
          return [chunk({ ...opening(null), tool_calls: [call] })]
        }
        case "text_delta":
          return [...textOpening(), chunk({ content: event.text })]
        case "thinking_delta":
          return reasoningField === "none" ? [] : [chunk({ ...opening(null), [reasoningField]: event.text })]
        case "tool_input_delta": {
          const n = toolIndex.get(event.index)
          return n === undefined ? [] : [chunk({ tool_calls: [{ index: n, function: { arguments: event.json } }] })]
        }
        case "message_end": {
          // A cut stream may hold a half-written call; "tool_calls" would invite the client to run it.
          const finish = stopReasonToOpenAIFinish(event.stopReason, toolIndex.size > 0 && !event.truncated)
          const frames = [...textOpening(), chunk({}, finish)]
          if (options.includeUsage) frames.push(envelope([], irUsageToOpenAI(event.usage ?? emptyUsage)))
          frames.push("data: [DONE]\n\n")
          return frames
        }
        case "error":
          return [sseData(openAIErrorBody(event.kind, event.message))]
        default:
          return []
      }
    }
  }
}
