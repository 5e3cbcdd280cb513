/**
 * The reply kinds the audio and embedding routes add to `SimReply` and `FileReply`: a body produced while it is
 * written (speech piped out of ffmpeg, plain-text transcripts), and a reply that needs I/O before it is known (a
 * transcription whose duration ffmpeg reads, a speech format whose encoder is looked up once).
 */
import { Readable } from "node:stream"
import type { SimReply } from "../SimResponse.ts"

export interface StreamBody {
  readonly body: Readable
  /** Stops producing (kills the encoder); called when the caller leaves or a fault cuts the reply. */
  readonly stop: () => void
}

export interface StreamReply {
  readonly _tag: "Stream"
  readonly status: number
  /** Includes `content-type`; `content-length` only when known up front, otherwise the body goes out chunked. */
  readonly headers: Readonly<Record<string, string>>
  /** Starts producing the body; the server calls it once, when it writes the reply. */
  readonly open: () => StreamBody
}

export interface AsyncReply {
  readonly _tag: "Async"
  readonly run: () => Promise<SimReply | StreamReply>
}

export type AudioReply = StreamReply | AsyncReply

export const streamReply = (
  headers: Readonly<Record<string, string>>,
  open: () => StreamBody,
  status = 200
): StreamReply => ({ _tag: "Stream", status, headers, open })

export const asyncReply = (run: () => Promise<SimReply | StreamReply>): AsyncReply => ({ _tag: "Async", run })

/** A body known in full, e.g. a transcript as `text`, `srt` or `vtt`. */
export const textReply = (text: string, contentType = "text/plain; charset=utf-8", status = 200): StreamReply => {
  const bytes = Buffer.from(text, "utf8")
  return streamReply(
    { "content-type": contentType, "content-length": String(bytes.length) },
    () => ({ body: Readable.from([bytes]), stop: () => {} }),
    status
  )
}
