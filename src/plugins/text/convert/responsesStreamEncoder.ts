/**
 * The streaming IR → a Responses API stream: the encoder writes the sequence of semantic events a Responses client
 * reads (responsesStream.ts parses the same from an upstream), each event with its `sequence_number`, and keeps the
 * finished Response object with every item whole (encrypted reasoning included) for the gateway to store; the
 * client's events carry encrypted reasoning only when it asked for it with `include`.
 */
import type { Usage } from "./ChatIR.ts"
import { emptyUsage } from "./ChatIR.ts"
import type { StreamEncoder, StreamEvent } from "./ChatStream.ts"
import { sseEvent } from "./ChatStream.ts"
import type { JsonRecord } from "./json.ts"
import {
  functionCallItem,
  irUsageToResponses,
  itemId,
  messageItem,
  reasoningItem,
  statusOf,
  webSearchCallItem,
  webSearchEvents
} from "./responses.ts"
import { echoedSettings, type ResponseIdentity, withoutEncrypted } from "./responsesResponse.ts"
import { toolNamesOf } from "./toolNamespaces.ts"

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

  /** The terminal event `type`: the Response as it ended (`fields` say how), every item whole, kept as `final`. */
  const finish = (status: string, type: string, fields: JsonRecord): ReadonlyArray<string> => {
    const frames = [...stop()]
    final = response(status, { ...fields, output: [...output], usage: irUsageToResponses(usage) })
    frames.push(event(type, { response: forClient(final) }))
    return frames
  }

  /** How the message ended: completed, incomplete or failed. */
  const endMessage = (ev: Extract<StreamEvent, { readonly type: "message_end" }>): ReadonlyArray<string> => {
    if (ev.usage !== undefined) usage = ev.usage
    const { status, incomplete_details } = statusOf(ev.stopReason)
    const type =
      status === "completed" ? "response.completed" : status === "failed" ? "response.failed" : "response.incomplete"
    return finish(status, type, {
      ...(status === "completed" ? { completed_at: identity.createdAt } : {}),
      incomplete_details,
      ...(status === "failed" ? { error: { code: "server_error", message: "the model failed to finish" } } : {})
    })
  }

  /** A failure mid-stream: `response.failed` with what was output so far. */
  const fail = (ev: Extract<StreamEvent, { readonly type: "error" }>): ReadonlyArray<string> =>
    finish("failed", "response.failed", {
      error: { code: ev.kind === "rate_limit" ? "rate_limit_exceeded" : "server_error", message: ev.message }
    })

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
