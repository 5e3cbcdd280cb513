import type { ServerResponse } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { SseEvent } from "../../../src/adapters/upstream/ResponseBody.ts"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamError } from "../../../src/adapters/upstream/UpstreamError.ts"
import { localServer, upstreamAt } from "./LocalServer.ts"

/** Writes each piece as its own TCP write, a few milliseconds apart, so pieces arrive as separate chunks. */
const writeSlowly = (response: ServerResponse, pieces: ReadonlyArray<string | Uint8Array>, end = true) => {
  response.writeHead(200, { "content-type": "text/event-stream" })
  const step = (index: number) => {
    if (index === pieces.length) {
      if (end) response.end()
      return
    }
    response.write(pieces[index])
    setTimeout(() => step(index + 1), 5)
  }
  step(0)
}

const plain = (event: SseEvent) => ({ event: event.event, id: event.id, data: event.data })

const eventsOf = (pieces: ReadonlyArray<string | Uint8Array>, options?: { readonly maxEventSize?: number }) =>
  Effect.gen(function* () {
    const server = yield* localServer((_, response) => writeSlowly(response, pieces))
    const client = yield* UpstreamClient
    const response = yield* client.request({ upstream: upstreamAt(`${server.origin}/v1`), method: "GET", path: "/sse" })
    return yield* Stream.fromAsyncIterable(response.body.events(options), (e) => e as UpstreamError).pipe(
      Stream.map(plain),
      Stream.runCollect
    )
  }).pipe(Effect.provide(UpstreamClient.layer))

describe("ResponseBody.events", () => {
  it.live("parses events split across chunks, CRLF line ends, multi-line data, comments, ids and names", () =>
    Effect.gen(function* () {
      const cafe = new TextEncoder().encode("data: café\n\n")
      const split = cafe.indexOf(0xc3) + 1 // inside the two bytes of "é"
      const events = yield* eventsOf([
        ": keep-alive comment\r\n",
        'event: message_start\r\ndata: {"a"',
        ":1}\r\n\r",
        "\ndata: line1\ndata: line2\n\n",
        cafe.slice(0, split),
        cafe.slice(split),
        "id: 7\nevent: ping\ndata: x\n\n",
        "data:no-space\r\rdata: [DONE]\n\n"
      ])
      assert.deepStrictEqual(events, [
        { event: "message_start", id: undefined, data: '{"a":1}' },
        { event: undefined, id: undefined, data: "line1\nline2" },
        { event: undefined, id: undefined, data: "café" },
        { event: "ping", id: "7", data: "x" },
        { event: undefined, id: undefined, data: "no-space" },
        { event: undefined, id: undefined, data: "[DONE]" }
      ])
    })
  )

  it.live("delivers a last event whose closing blank line is missing, but drops a line cut off mid-way", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(
        (yield* eventsOf(["data: a\n\n", "data: [DONE]\n"])).map((e) => e.data),
        ["a", "[DONE]"]
      )
      assert.deepStrictEqual(
        (yield* eventsOf(["data: a\n\n", 'data: {"trunc'])).map((e) => e.data),
        ["a"]
      )
    })
  )

  it.live("fails with Malformed when one event outgrows the buffer limit", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(
        eventsOf(["data: small\n\n", `data: ${"x".repeat(4096)}`, "more\n\n"], { maxEventSize: 1024 })
      )
      assert.strictEqual(error.reason._tag, "Malformed")
    })
  )

  it.live("a body can be read only once", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => writeSlowly(response, ["data: 1\n\n"]))
      const client = yield* UpstreamClient
      const response = yield* client.request({ upstream: upstreamAt(`${server.origin}/v1`), method: "GET", path: "/" })
      const events = response.body.events()
      assert.throws(() => response.body.chunks(), /already read/)
      yield* Effect.promise(async () => {
        await events.return?.()
      })
    }).pipe(Effect.provide(UpstreamClient.layer))
  )
})
