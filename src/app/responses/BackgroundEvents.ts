/**
 * Pieces of a background run that are plain data: the SSE text the chat pipeline writes, read back as events; a
 * response ended as failed; and the error a client sees for a run refused before it started.
 */
import { Stream } from "effect"
import type { JsonObject } from "../ports/ResponseStore.ts"
import type { ChatError } from "../ChatGateway.ts"
import { parseJsonObject } from "../../plugins/text/convert/json.ts"

/** The events of SSE text written by the gateway (`event:`/`data:` frames; `:` comment lines skipped). */
export const sseEvents = (frames: Stream.Stream<Uint8Array>): Stream.Stream<JsonObject> => {
  const decoder = new TextDecoder()
  let pending = ""
  const eventsOf = (text: string): ReadonlyArray<JsonObject> => {
    pending += text
    const frames = pending.split("\n\n")
    pending = frames.pop() ?? ""
    return frames.flatMap((frame) => {
      const data = frame
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => line.slice(6))
        .join("\n")
      if (data.length === 0) return []
      // An upstream's own frame passed through may not be JSON: it is not an event to record.
      const parsed = parseJsonObject(data)
      return parsed === undefined ? [] : [parsed]
    })
  }
  return frames.pipe(Stream.flatMap((bytes) => Stream.fromIterable(eventsOf(decoder.decode(bytes, { stream: true })))))
}

/** `response` ended as failed with `error`, nothing in its output. */
export const failedResponse = (response: JsonObject, error: { readonly code: string; readonly message: string }) => ({
  ...response,
  status: "failed",
  error,
  incomplete_details: null,
  output: []
})

/** The error of a run the pipeline refused before any output (no funds, a refused model, the upstream's refusal). */
export const failureOf = (error: ChatError): { code: string; message: string } => {
  switch (error._tag) {
    case "LedgerRejected":
      return { code: "insufficient_quota", message: error.message }
    case "ModelNotFound":
    case "ModelNotAllowed":
      return { code: "model_not_found", message: `The model \`${error.model}\` is not available to this key.` }
    case "InvalidChatRequest":
      return { code: "invalid_request", message: error.message }
    case "UpstreamFailed":
      return { code: error.code ?? "server_error", message: error.message }
    default:
      return { code: "server_error", message: "The response could not be run; nothing was charged." }
  }
}
