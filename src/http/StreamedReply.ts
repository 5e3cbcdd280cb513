/**
 * How a streamed chat reply goes on the wire: only the frames of the protocol that was called, in that protocol's
 * framing (SSE, or the JSON array Google streams when `alt=sse` is not asked for). What the call cost comes after
 * its last frame, where no protocol parser can trip on it: in HTTP trailers (`Trailer: x-tollgate-cost,
 * x-tollgate-balance`), and in-band as closing SSE comments only when the client asks with
 * `x-tollgate-stream-cost: comment`. Some clients' parsers take nothing but `data:` lines (the `@google/genai` 1.30
 * bundled in Gemini CLI throws on anything else, and the CLI retries — each try billed), so nothing else is written
 * unasked. See docs/api/text.md "What a request cost".
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { createParser } from "eventsource-parser"
import type { ServerResponse } from "node:http"
import { CurrentTelemetry, type RequestTelemetry } from "../app/RequestTelemetry.ts"
import { formatMicros } from "../domain/Money.ts"

/** `sse`: Server-Sent Events. `json-array`: one JSON array whose elements arrive as they are made (Gemini). */
export type StreamFraming = "sse" | "json-array"

/** The request header a client sets to also get the cost in-band, as SSE comments after the last event. */
export const STREAM_COST_HEADER = "x-tollgate-stream-cost"

const COST_TRAILERS = "x-tollgate-cost, x-tollgate-balance"

const HEADERS: Record<StreamFraming, Record<string, string>> = {
  sse: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-accel-buffering": "no" },
  "json-array": { "content-type": "application/json; charset=utf-8", "cache-control": "no-cache" }
}

const encoder = new TextEncoder()

/** What the call cost, once it was charged: the trailers' fields (nothing when it was not charged). */
const costFields = (telemetry: RequestTelemetry): Record<string, string> =>
  telemetry.charge === undefined
    ? {}
    : {
        "x-tollgate-cost": formatMicros(telemetry.charge.cost),
        ...(telemetry.balance === undefined ? {} : { "x-tollgate-balance": formatMicros(telemetry.balance) })
      }

/**
 * The Node response behind `request` when it can carry trailers: HTTP/1.1, where a body of unknown length is sent
 * chunked (Node refuses a `Trailer` header on HTTP/1.0, which has no chunked encoding).
 */
const trailerCapable = (request: HttpServerRequest.HttpServerRequest): ServerResponse | undefined => {
  const incoming = NodeHttpServerRequest.toIncomingMessage(request) as { httpVersion?: unknown } | undefined
  if (incoming?.httpVersion !== "1.1") return undefined
  const response = NodeHttpServerRequest.toServerResponse(request) as Partial<ServerResponse> | undefined
  return typeof response?.addTrailers === "function" ? (response as ServerResponse) : undefined
}

/** The closing SSE comment lines, for a client that asked for the cost in-band. */
const costComment = (telemetry: RequestTelemetry): Stream.Stream<Uint8Array> =>
  Stream.suspend(() => {
    const fields = Object.entries(costFields(telemetry))
    return fields.length === 0
      ? Stream.empty
      : Stream.succeed(encoder.encode(`${fields.map(([name, value]) => `: ${name}: ${value}\n`).join("")}\n`))
  })

/**
 * SSE `data:` events as the elements of one JSON array (`[{…}\n,\r\n{…}]`), the way Google streams
 * `streamGenerateContent` to a client that did not ask for `alt=sse`. Parses the gateway's own SSE output.
 */
export const sseToJsonArray = <E, R>(frames: Stream.Stream<Uint8Array, E, R>): Stream.Stream<Uint8Array, E, R> =>
  Stream.suspend(() => {
    const decoder = new TextDecoder()
    let opened = false
    let elements = ""
    const parser = createParser({
      onEvent: (event) => {
        elements += `${opened ? "\n,\r\n" : "["}${event.data}`
        opened = true
      }
    })
    return frames.pipe(
      Stream.map((chunk) => {
        parser.feed(decoder.decode(chunk, { stream: true }))
        const text = elements
        elements = ""
        return encoder.encode(text)
      }),
      Stream.concat(Stream.sync(() => encoder.encode(opened ? "\n]" : "[]"))),
      Stream.filter((chunk) => chunk.length > 0)
    )
  })

/**
 * A streamed response whose cost, known only once its body has ended (the body's own end settles the call), follows
 * it in HTTP trailers where the connection can carry them.
 */
export const costTrailedStream = (
  request: HttpServerRequest.HttpServerRequest,
  telemetry: RequestTelemetry,
  body: Stream.Stream<Uint8Array, unknown>,
  options: { readonly contentType: string; readonly headers: Readonly<Record<string, string>> }
): HttpServerResponse.HttpServerResponse => {
  const node = trailerCapable(request)
  if (node === undefined) return HttpServerResponse.stream(body, options)
  const trailed = Stream.ensuring(
    body,
    Effect.sync(() => {
      if (!node.writableEnded && !node.destroyed) node.addTrailers(costFields(telemetry))
    })
  )
  return HttpServerResponse.stream(trailed, { ...options, headers: { ...options.headers, trailer: COST_TRAILERS } })
}

/** A streamed chat reply: its framing, its cost trailers, and the in-band cost lines if the client asked for them. */
export const streamedReply = (frames: Stream.Stream<Uint8Array, unknown>, framing: StreamFraming = "sse") =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const telemetry = yield* CurrentTelemetry
    const inBand = framing === "sse" && request.headers[STREAM_COST_HEADER]?.toLowerCase() === "comment"
    const framed = framing === "json-array" ? sseToJsonArray(frames) : frames
    const body = inBand ? Stream.concat(framed, costComment(telemetry)) : framed
    return costTrailedStream(request, telemetry, body, {
      headers: HEADERS[framing],
      contentType: HEADERS[framing]["content-type"]
    })
  })

/** Audio or any other streamed body billed at its end: its cost in trailers. */
export const streamedBody = (
  body: Stream.Stream<Uint8Array, unknown>,
  options: { readonly contentType: string; readonly headers: Readonly<Record<string, string>> }
) =>
  Effect.gen(function* () {
    return costTrailedStream(yield* HttpServerRequest.HttpServerRequest, yield* CurrentTelemetry, body, options)
  })
