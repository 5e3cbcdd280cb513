/**
 * How the simulator writes each kind of reply — JSON, server-sent events, a stored file, a stream being produced —
 * with the faults a test asked for applied on the way: never answering, a malformed body, a delay between frames, a
 * connection cut halfway.
 */
import { createReadStream } from "node:fs"
import type { ServerResponse } from "node:http"
import type { FaultKnobs } from "./Faults.ts"
import type { StreamReply } from "./audio/AudioReply.ts"
import type { JsonReply, SseReply } from "./SimResponse.ts"
import type { FileReply } from "./video/VideoFiles.ts"

const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no"
}

export const makeReplyWriters = (deps: {
  /** Runs `run` after `ms` unless the simulator closed meanwhile. */
  readonly later: (ms: number, run: () => void) => void
  /** Drops a connection on purpose (not counted as the client abandoning it). */
  readonly cut: (res: ServerResponse) => void
  readonly isClosed: () => boolean
}) => {
  const { later, cut, isClosed } = deps
  const writeJson = (res: ServerResponse, reply: Omit<JsonReply, "_tag">, faults: FaultKnobs): void => {
    if (faults.endless === true || faults.stallAfter !== undefined) return // the reply never comes
    const full = JSON.stringify(reply.body)
    const text = faults.malformed === true ? full.slice(0, Math.max(1, Math.floor(full.length / 2))) : full
    res.writeHead(reply.status, {
      ...reply.headers,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text))
    })
    if (faults.cutAfter !== undefined) {
      res.write(text.slice(0, Math.floor(text.length / 2)))
      later(5, () => cut(res))
      return
    }
    res.end(text)
  }

  const writeSse = (res: ServerResponse, reply: SseReply, faults: FaultKnobs): void => {
    res.writeHead(200, { ...SSE_HEADERS, ...reply.headers })
    res.flushHeaders()
    const events = [...reply.head, ...reply.tail]
    if (faults.malformed === true) events[Math.min(1, events.length - 1)] = reply.malformed
    const delay = faults.chunkDelayMs ?? 0
    // Without a delay every frame goes out in this tick anyway; corking turns them into one write instead of dozens.
    if (delay === 0 && faults.endless !== true) {
      res.socket?.cork()
      process.nextTick(() => res.socket?.uncork())
    }
    const step = (index: number): void => {
      for (let i = index; ; i++) {
        if (isClosed() || res.destroyed) return
        if (faults.cutAfter !== undefined && i >= faults.cutAfter) {
          // Give the written frames a moment to leave, then drop the connection without the closing events.
          later(5, () => cut(res))
          return
        }
        if (faults.errorAfter !== undefined && i >= faults.errorAfter) {
          res.end(reply.error)
          return
        }
        if (faults.stallAfter !== undefined && i >= faults.stallAfter) return
        const endless = faults.endless === true && i >= reply.head.length
        if (!endless && i >= events.length) {
          res.end()
          return
        }
        const drained = res.write(endless ? reply.filler(i - reply.head.length) : events[i]!)
        if (!drained) {
          res.once("drain", () => (delay > 0 ? later(delay, () => step(i + 1)) : step(i + 1)))
          return
        }
        // An endless stream must yield to the event loop even without a delay.
        if (delay > 0 || endless) {
          later(Math.max(delay, 1), () => step(i + 1))
          return
        }
      }
    }
    step(0)
  }

  const writeFile = (res: ServerResponse, reply: FileReply, faults: FaultKnobs): void => {
    if (faults.endless === true || faults.stallAfter !== undefined) return // the reply never comes
    res.writeHead(200, { "content-type": reply.contentType, "content-length": String(reply.bytes) })
    if (reply.headOnly || reply.bytes === 0) {
      res.end()
      return
    }
    const cutting = faults.cutAfter !== undefined
    const file = createReadStream(reply.path, cutting ? { end: Math.floor(reply.bytes / 2) - 1 } : {})
    file.once("error", () => res.destroy())
    file.pipe(res, { end: !cutting })
    if (cutting) file.once("end", () => later(5, () => cut(res)))
  }

  /** A body produced while it is written (speech from ffmpeg, transcripts as text); chunked unless its length is known. */
  const writeStream = (res: ServerResponse, reply: StreamReply, faults: FaultKnobs): void => {
    if (faults.endless === true || faults.stallAfter !== undefined) return // the reply never comes
    if (isClosed() || res.destroyed) return
    const { body, stop } = reply.open()
    res.once("close", () => {
      if (!res.writableEnded) stop()
    })
    body.once("error", () => {
      stop()
      res.destroy()
    })
    res.writeHead(reply.status, reply.headers)
    if (faults.cutAfter !== undefined) {
      // Send the first chunk only, then drop the connection mid-body.
      body.once("data", (chunk: Buffer) => {
        body.pause()
        stop()
        res.write(chunk)
        later(5, () => cut(res))
      })
      return
    }
    body.pipe(res)
  }

  return { writeJson, writeSse, writeFile, writeStream }
}
