/**
 * A Responses API stream whose response could not be stored ends in `response.failed` instead of the terminal event
 * it was going to end with (`response.completed`, `.incomplete` or `.failed`): same sequence number, the response
 * marked failed with the error the gateway gives. Frames are the SSE text the gateway writes (`event:` then `data:`).
 */
import { sseEvent } from "./ChatStream.ts"
import { isRecord, parseJson } from "./json.ts"

const TERMINAL = /event: response\.(completed|incomplete|failed)\ndata: /

/**
 * `text` with its terminal frame replaced by `response.failed` carrying `error`; `text` as it is when it holds no
 * terminal frame.
 */
export const withFailedTerminal = (
  text: string,
  error: { readonly code: string; readonly message: string }
): string => {
  const match = TERMINAL.exec(text)
  if (match === null) return text
  const start = match.index
  const dataStart = start + match[0].length
  const end = text.indexOf("\n\n", dataStart)
  const data = parseJson(text.slice(dataStart, end < 0 ? text.length : end))
  if (!isRecord(data) || !isRecord(data.response)) return text
  const response = { ...data.response, status: "failed", error, incomplete_details: null }
  const failed = sseEvent("response.failed", {
    type: "response.failed",
    response,
    sequence_number: data.sequence_number
  })
  return text.slice(0, start) + failed + (end < 0 ? "" : text.slice(end + 2))
}
