/**
 * The Responses API's stream: typed events, each with an `event:` line and a `sequence_number` counting from 0, from
 * `response.created` to `response.completed` (or `response.incomplete`), and no `[DONE]` line.
 */
import { splitByTokens } from "../tokenizer/Tokenizer.ts"
import { arrayField, field, type JsonRecord, stringField } from "./Json.ts"
import { splitJson } from "./OpenAIChatRequest.ts"
import { eventFrame, type SseReply } from "./SimResponse.ts"

const TOKENS_PER_DELTA = 3

type Event = JsonRecord

const bareItem = (item: Event) => ({ id: item.id, type: item.type })
const textOf = (item: Event): string => String(field(arrayField(item, "content")?.[0], "text") ?? "")
const summaryOf = (item: Event): string | undefined => stringField(arrayField(item, "summary")?.[0], "text")

/** An item's events up to its last delta (`open`) and the ones that finish it (`close`), without sequence numbers. */
const itemEvents = (item: Event, index: number): { readonly open: Array<Event>; readonly close: Array<Event> } => {
  const at = { item_id: item.id, output_index: index }
  switch (item.type) {
    case "reasoning": {
      const summary = summaryOf(item)
      // The reasoning arrives with its last event; the item opens empty.
      const added = {
        type: "response.output_item.added",
        output_index: index,
        item: { ...bareItem(item), summary: [] }
      }
      const done = { type: "response.output_item.done", output_index: index, item }
      if (summary === undefined) return { open: [added], close: [done] }
      const part = { ...at, summary_index: 0 }
      return {
        open: [
          added,
          { type: "response.reasoning_summary_part.added", ...part, part: { type: "summary_text", text: "" } },
          ...splitByTokens(summary, TOKENS_PER_DELTA).map((delta) => ({
            type: "response.reasoning_summary_text.delta",
            ...part,
            delta
          }))
        ],
        close: [
          { type: "response.reasoning_summary_text.done", ...part, text: summary },
          { type: "response.reasoning_summary_part.done", ...part, part: { type: "summary_text", text: summary } },
          done
        ]
      }
    }
    case "message": {
      const text = textOf(item)
      const part = { ...at, content_index: 0 }
      const emptyPart = { type: "output_text", annotations: [], logprobs: [], text: "" }
      return {
        open: [
          {
            type: "response.output_item.added",
            output_index: index,
            item: { ...item, status: "in_progress", content: [] }
          },
          { type: "response.content_part.added", ...part, part: emptyPart },
          ...splitByTokens(text, TOKENS_PER_DELTA).map((delta) => ({
            type: "response.output_text.delta",
            ...part,
            delta,
            logprobs: []
          }))
        ],
        close: [
          { type: "response.output_text.done", ...part, text, logprobs: [] },
          { type: "response.content_part.done", ...part, part: { ...emptyPart, text } },
          { type: "response.output_item.done", output_index: index, item }
        ]
      }
    }
    case "web_search_call": {
      const at = { output_index: index, item_id: item.id }
      return {
        open: [
          { type: "response.output_item.added", output_index: index, item: { ...item, status: "in_progress" } },
          { type: "response.web_search_call.in_progress", ...at },
          { type: "response.web_search_call.searching", ...at }
        ],
        close: [
          { type: "response.web_search_call.completed", ...at },
          { type: "response.output_item.done", output_index: index, item }
        ]
      }
    }
    default: {
      const args = String(item.arguments)
      return {
        open: [
          {
            type: "response.output_item.added",
            output_index: index,
            item: { ...item, status: "in_progress", arguments: "" }
          },
          ...splitJson(args).map((delta) => ({ type: "response.function_call_arguments.delta", ...at, delta }))
        ],
        close: [
          { type: "response.function_call_arguments.done", ...at, name: item.name, arguments: args },
          { type: "response.output_item.done", output_index: index, item }
        ]
      }
    }
  }
}

/** The content event an endless stream keeps sending for its last item. */
const fillerEvent = (item: Event | undefined, index: number, n: number): Event => {
  const at = { item_id: item?.id ?? "", output_index: index }
  switch (item?.type) {
    case "reasoning":
      return { type: "response.reasoning_summary_text.delta", ...at, summary_index: 0, delta: ` more thought ${n}.` }
    case "function_call":
      return { type: "response.function_call_arguments.delta", ...at, delta: " " }
    default:
      return { type: "response.output_text.delta", ...at, content_index: 0, delta: ` filler ${n}.`, logprobs: [] }
  }
}

const frame = (event: Event, sequence: number): string =>
  eventFrame(String(event.type), { type: event.type, sequence_number: sequence, ...event })

/**
 * The stream of a response whose `output` is known: the opening events carry `opening` (in progress, no output yet),
 * the last one `final`. The fault writer may cut it anywhere, so every frame's sequence number is its position.
 */
export const streamReply = (
  output: ReadonlyArray<Event>,
  headers: Readonly<Record<string, string>>,
  opening: JsonRecord,
  final: JsonRecord
): SseReply => {
  const head: Array<Event> = [
    { type: "response.created", response: opening },
    { type: "response.in_progress", response: opening }
  ]
  const tail: Array<Event> = []
  output.forEach((item, index) => {
    const events = itemEvents(item, index)
    head.push(...events.open)
    if (index === output.length - 1) tail.push(...events.close)
    else head.push(...events.close)
  })
  tail.push({ type: `response.${String(final.status)}`, response: final })
  const lastIndex = Math.max(0, output.length - 1)
  const error = {
    type: "error",
    code: "server_error",
    message: "The server had an error while processing your request (simulated).",
    param: null
  }
  return {
    _tag: "Sse",
    headers,
    head: head.map((event, at) => frame(event, at)),
    tail: tail.map((event, at) => frame(event, head.length + at)),
    filler: (n) => frame(fillerEvent(output[lastIndex], lastIndex, n), head.length + n),
    // One fixed frame whatever the event it replaces, so its number is that of the first closing event.
    error: frame(error, head.length),
    malformed: `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":1,"delta":\n\n`
  }
}
