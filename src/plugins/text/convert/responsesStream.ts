/**
 * Responses API streams ↔ the streaming IR.
 *
 * The parser reads an `openai-responses` upstream's semantic events (output items, content parts, text, reasoning
 * summary and function-argument deltas, then `response.completed`/`incomplete`/`failed`). The encoder writes the same
 * sequence for a Responses client, each event with its `sequence_number`, and keeps the finished Response object with
 * every item whole (encrypted reasoning included) for the gateway to store; the client's events carry encrypted
 * reasoning only when it asked for it with `include`.
 */
import type { Usage } from "./ChatIR.ts"
import { emptyUsage } from "./ChatIR.ts"
import type { ErrorKind, Fallback, StreamEncoder, StreamEvent, StreamParser, UpstreamEvent } from "./ChatStream.ts"
import { makeSequencer, sseEvent } from "./ChatStream.ts"
import { asRecord, asString, type JsonRecord } from "./json.ts"
import {
  functionCallItem,
  irUsageToResponses,
  itemId,
  messageItem,
  reasoningItem,
  responsesUsageToIR,
  statusOf,
  stopReasonOf,
  webSearchCallItem,
  webSearchEvents
} from "./responses.ts"
import { echoedSettings, type ResponseIdentity, withoutEncrypted } from "./responsesResponse.ts"
import { readResponsesEncrypted } from "./thinkingSignature.ts"
import { toolNamesOf } from "./toolNamespaces.ts"

const errorKindOf = (code: unknown): ErrorKind =>
  code === "rate_limit_exceeded" ? "rate_limit" : code === "invalid_prompt" ? "invalid_request" : "api_error"

export const makeResponsesStreamParser = (fallback: Fallback): StreamParser => {
  const seq = makeSequencer(fallback)
  let sawToolCalls = false
  let argumentDeltas = 0
  let usage: Usage | undefined

  const finishWith = (response: JsonRecord) => {
    if (response.usage !== undefined && response.usage !== null) {
      usage = responsesUsageToIR(response.usage, response.output)
    }
    if (response.status === "failed") {
      const error = asRecord(response.error)
      seq.error(errorKindOf(error.code), asString(error.message) ?? "the upstream failed to finish the response")
      return
    }
    seq.finish({
      stopReason: stopReasonOf(response.status, response.incomplete_details, sawToolCalls),
      ...(usage === undefined ? {} : { usage }),
      truncated: false
    })
  }

  const push = (event: UpstreamEvent): ReadonlyArray<StreamEvent> => {
    const data = asRecord(event.data)
    const item = asRecord(data.item)
    switch (data.type) {
      case "response.created":
      case "response.in_progress": {
        const response = asRecord(data.response)
        seq.start(asString(response.id), asString(response.model))
        break
      }
      case "response.output_item.added":
        if (item.type === "reasoning") seq.openBlock({ type: "thinking" })
        else if (item.type === "function_call") {
          sawToolCalls = true
          argumentDeltas = 0
          seq.openBlock({ type: "tool_use", id: asString(item.call_id) ?? "", name: asString(item.name) ?? "" })
        }
        break
      case "response.output_text.delta":
      case "response.refusal.delta":
        seq.ensureText(asString(data.delta) ?? "")
        break
      case "response.reasoning_summary_part.added":
        if (typeof data.summary_index === "number" && data.summary_index > 0) seq.ensureThinking("\n\n")
        break
      case "response.reasoning_summary_text.delta":
      case "response.reasoning_text.delta":
        seq.ensureThinking(asString(data.delta) ?? "")
        break
      case "response.function_call_arguments.delta":
        argumentDeltas++
        seq.deltaToolInput(asString(data.delta) ?? "")
        break
      case "response.output_item.done":
        if (item.type === "reasoning") {
          const encrypted = readResponsesEncrypted(asString(item.encrypted_content))
          if (encrypted.type === "signed" && encrypted.origin !== "synthetic") {
            if (seq.openKind !== "thinking") seq.openBlock({ type: "thinking" })
            seq.deltaSignature(encrypted.signature, encrypted.origin)
          }
        } else if (item.type === "function_call" && argumentDeltas === 0) {
          seq.deltaToolInput(asString(item.arguments) ?? "")
        }
        if (item.type === "reasoning" || item.type === "function_call" || item.type === "message") seq.close()
        break
      case "response.completed":
      case "response.incomplete":
      case "response.failed":
        finishWith(asRecord(data.response))
        break
      case "error":
        seq.error(errorKindOf(data.code), asString(data.message) ?? "the upstream stream failed")
        break
    }
    return seq.drain()
  }

  return {
    push,
    end: () => {
      seq.finish({ stopReason: "end_turn", ...(usage === undefined ? {} : { usage }), truncated: true })
      return seq.drain()
    }
  }
}

export interface ResponsesStreamEncoderOptions {
  readonly identity: ResponseIdentity
  /** The client's request, whose settings every Response object repeats. */
  readonly body: JsonRecord
  readonly includeEncrypted: boolean
}

export interface ResponsesStreamEncoder extends StreamEncoder {
  /** The Response as it ended (every item whole), once a terminal event was written; undefined before. */
  readonly final: () => JsonRecord | undefined
}

type Open = { readonly index: number; readonly kind: string; item: JsonRecord; text: string; summaryOpen: boolean }

export const makeResponsesStreamEncoder = (options: ResponsesStreamEncoderOptions): ResponsesStreamEncoder => {
  const { identity, body } = options
  const names = toolNamesOf(body.tools)
  let sequence = 0
  const output: Array<JsonRecord> = []
  let open: Open | undefined
  let usage: Usage = emptyUsage
  let final: JsonRecord | undefined

  const event = (type: string, fields: JsonRecord): string =>
    sseEvent(type, { type, ...fields, sequence_number: sequence++ })
  const shown = (item: JsonRecord): unknown => (options.includeEncrypted ? item : withoutEncrypted(item))
  const response = (status: string, extra: JsonRecord): JsonRecord => ({
    id: identity.id,
    object: "response",
    created_at: identity.createdAt,
    status,
    error: null,
    incomplete_details: null,
    model: identity.model,
    output: [],
    ...echoedSettings(body),
    ...extra
  })
  const forClient = (full: JsonRecord): JsonRecord => ({
    ...full,
    output: (full.output as ReadonlyArray<JsonRecord>).map(shown)
  })

  const start = (index: number, kind: string, item: JsonRecord): ReadonlyArray<string> => {
    open = { index, kind, item, text: "", summaryOpen: false }
    const frames = [event("response.output_item.added", { output_index: index, item: shown(item) })]
    if (kind === "text") {
      const part = { type: "output_text", text: "", annotations: [], logprobs: [] }
      frames.push(
        event("response.content_part.added", { item_id: item.id, output_index: index, content_index: 0, part })
      )
    }
    return frames
  }

  const stop = (): ReadonlyArray<string> => {
    if (open === undefined) return []
    const { index, kind, text } = open
    const id = open.item.id as string
    const frames: Array<string> = []
    let done: JsonRecord
    if (kind === "text") {
      done = messageItem(text, id)
      const part = (done.content as ReadonlyArray<JsonRecord>)[0]
      const at = { item_id: id, output_index: index, content_index: 0 }
      frames.push(event("response.output_text.done", { ...at, text, logprobs: [] }))
      frames.push(event("response.content_part.done", { ...at, part }))
    } else if (kind === "tool_use") {
      done = { ...open.item, status: "completed", arguments: text }
      const at = { item_id: id, output_index: index }
      frames.push(event("response.function_call_arguments.done", { ...at, name: done.name, arguments: text }))
    } else {
      done = open.item
      if (open.summaryOpen) {
        const at = { item_id: id, output_index: index, summary_index: 0 }
        frames.push(event("response.reasoning_summary_text.done", { ...at, text }))
        frames.push(event("response.reasoning_summary_part.done", { ...at, part: { type: "summary_text", text } }))
      }
    }
    output.push(done)
    frames.push(event("response.output_item.done", { output_index: index, item: shown(done) }))
    open = undefined
    return frames
  }

  /** A new output item for the block that starts at `index`. */
  const startBlock = (
    block: Extract<StreamEvent, { readonly type: "block_start" }>["block"]
  ): ReadonlyArray<string> => {
    const index = output.length
    switch (block.type) {
      case "text":
        return start(index, "text", {
          ...messageItem("", itemId("msg", identity.id, index), "in_progress"),
          content: []
        })
      case "thinking":
        return start(index, "thinking", reasoningItem({ type: "thinking", text: "" }, itemId("rs", identity.id, index)))
      case "redacted_thinking":
        return start(
          index,
          "redacted",
          reasoningItem({ type: "redacted_thinking", data: block.data }, itemId("rs", identity.id, index))
        )
      case "tool_use": {
        const call = {
          type: "tool_call" as const,
          id: block.id,
          name: block.name,
          input: {},
          ...(block.signature === undefined ? {} : { signature: block.signature })
        }
        return start(index, "tool_use", {
          ...functionCallItem(call, itemId("fc", identity.id, index), "in_progress", names),
          arguments: ""
        })
      }
    }
    return []
  }

  /** Reasoning text: its summary part opened with the first delta. */
  const thinkingDelta = (text: string): ReadonlyArray<string> => {
    if (open?.kind !== "thinking") return []
    const at = { item_id: open.item.id, output_index: open.index, summary_index: 0 }
    const frames: Array<string> = []
    if (!open.summaryOpen) {
      open.summaryOpen = true
      frames.push(event("response.reasoning_summary_part.added", { ...at, part: { type: "summary_text", text: "" } }))
    }
    open.text += text
    frames.push(event("response.reasoning_summary_text.delta", { ...at, delta: text }))
    return frames
  }

  /** The open reasoning item's signature, kept as its encrypted content; nothing is sent for it. */
  const signThinking = (ev: Extract<StreamEvent, { readonly type: "signature_delta" }>): ReadonlyArray<string> => {
    if (open?.kind !== "thinking") return []
    const signed = reasoningItem(
      { type: "thinking", text: open.text, signature: ev.signature, signatureOrigin: ev.origin },
      open.item.id as string
    )
    open.item = {
      ...open.item,
      ...(signed.encrypted_content === undefined ? {} : { encrypted_content: signed.encrypted_content })
    }
    return []
  }

  /** The terminal event for how the message ended: completed, incomplete or failed, with every item whole. */
  const endMessage = (ev: Extract<StreamEvent, { readonly type: "message_end" }>): ReadonlyArray<string> => {
    const frames = [...stop()]
    if (ev.usage !== undefined) usage = ev.usage
    const { status, incomplete_details } = statusOf(ev.stopReason)
    final = response(status, {
      ...(status === "completed" ? { completed_at: identity.createdAt } : {}),
      incomplete_details,
      ...(status === "failed" ? { error: { code: "server_error", message: "the model failed to finish" } } : {}),
      output: [...output],
      usage: irUsageToResponses(usage)
    })
    const type =
      status === "completed" ? "response.completed" : status === "failed" ? "response.failed" : "response.incomplete"
    frames.push(event(type, { response: forClient(final) }))
    return frames
  }

  /** A failure mid-stream: `response.failed` with what was output so far. */
  const fail = (ev: Extract<StreamEvent, { readonly type: "error" }>): ReadonlyArray<string> => {
    const frames = [...stop()]
    final = response("failed", {
      error: { code: ev.kind === "rate_limit" ? "rate_limit_exceeded" : "server_error", message: ev.message },
      output: [...output],
      usage: irUsageToResponses(usage)
    })
    frames.push(event("response.failed", { response: forClient(final) }))
    return frames
  }

  const encode = (ev: StreamEvent): ReadonlyArray<string> => {
    switch (ev.type) {
      case "message_start": {
        if (ev.usage !== undefined) usage = ev.usage
        const created = response("in_progress", {})
        return [event("response.created", { response: created }), event("response.in_progress", { response: created })]
      }
      case "block_start":
        return startBlock(ev.block)
      case "text_delta":
        if (open?.kind !== "text") return []
        open.text += ev.text
        return [
          event("response.output_text.delta", {
            item_id: open.item.id,
            output_index: open.index,
            content_index: 0,
            delta: ev.text,
            logprobs: []
          })
        ]
      case "thinking_delta":
        return thinkingDelta(ev.text)
      case "signature_delta":
        return signThinking(ev)
      case "tool_input_delta":
        if (open?.kind !== "tool_use") return []
        open.text += ev.json
        return [
          event("response.function_call_arguments.delta", {
            item_id: open.item.id,
            output_index: open.index,
            delta: ev.json
          })
        ]
      case "block_stop": {
        if (open?.kind === "thinking" && open.text !== "") {
          open.item = { ...open.item, summary: [{ type: "summary_text", text: open.text }] }
        }
        return stop()
      }
      case "usage":
        usage = ev.usage
        return []
      case "web_search": {
        const index = output.length
        const item = webSearchCallItem(ev.search, itemId("ws", identity.id, index))
        output.push(item)
        return webSearchEvents(item, index).map(([type, fields]) => event(type, fields))
      }
      case "message_end":
        return endMessage(ev)
      case "error":
        return fail(ev)
    }
  }

  return { encode, final: () => final }
}
