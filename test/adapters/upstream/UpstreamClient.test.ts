import { createServer as createNetServer } from "node:net"
import type { ServerResponse } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Redacted, Stream } from "effect"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import { AnthropicPaths, GeminiPaths, OpenAiPaths } from "../../../src/adapters/upstream/UpstreamEndpoints.ts"
import { type UpstreamError, ERROR_BODY_LIMIT } from "../../../src/adapters/upstream/UpstreamError.ts"
import { API_KEY, localServer, upstreamAt, within } from "./LocalServer.ts"

const provideClient = Effect.provide(UpstreamClient.layer)

const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

/** A port nothing listens on. */
const closedPort = Effect.callback<number>((resume) => {
  const server = createNetServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const assertNoKey = (error: UpstreamError) => {
  assert.notInclude(String(error), API_KEY)
  assert.notInclude(error.message, API_KEY)
  assert.notInclude(JSON.stringify(error), API_KEY)
}

describe("UpstreamClient", () => {
  it.live("posts JSON with openai credentials under the /v1 base path and reads JSON back", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response, body) => json(response, 200, { echoed: JSON.parse(body) }))
      const client = yield* UpstreamClient
      const response = yield* client.request({
        upstream: upstreamAt(`${server.origin}/v1`),
        method: "POST",
        path: OpenAiPaths.chatCompletions,
        body: JSON.stringify({ model: "m" })
      })
      assert.strictEqual(response.status, 200)
      assert.strictEqual(response.headers["content-type"], "application/json")
      assert.deepStrictEqual(yield* response.body.json, { echoed: { model: "m" } })
      const seen = server.requests[0]
      assert.strictEqual(seen.method, "POST")
      assert.strictEqual(seen.url, "/v1/chat/completions")
      assert.strictEqual(seen.headers.authorization, `Bearer ${API_KEY}`)
      assert.strictEqual(seen.headers["content-type"], "application/json")
    }).pipe(provideClient)
  )

  it.live("keeps a base path prefix and reuses the keep-alive connection", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => json(response, 200, { ok: true }))
      const client = yield* UpstreamClient
      const upstream = upstreamAt(`${server.origin}/proxy/v1/`, { maxConnections: 1 })
      for (let i = 0; i < 3; i++) {
        const response = yield* client.request({ upstream, method: "GET", path: OpenAiPaths.models })
        yield* response.body.json
      }
      assert.deepStrictEqual(
        server.requests.map((request) => request.url),
        ["/proxy/v1/models", "/proxy/v1/models", "/proxy/v1/models"]
      )
      assert.strictEqual(server.requests[0].headers["content-type"], undefined)
      assert.strictEqual(server.connections(), 1)
    }).pipe(provideClient)
  )

  it.live("sends anthropic credentials and version, keeping a caller's version but never a caller's key", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => json(response, 200, {}))
      const client = yield* UpstreamClient
      const upstream = upstreamAt(server.origin, { protocol: "anthropic" })
      yield* Effect.flatMap(
        client.request({ upstream, method: "POST", path: AnthropicPaths.messages, body: "{}" }),
        (r) => r.body.text
      )
      yield* Effect.flatMap(
        client.request({
          upstream,
          method: "POST",
          path: AnthropicPaths.messages,
          body: "{}",
          headers: { "anthropic-version": "2024-10-22", "x-api-key": "client-key", "anthropic-beta": "b1" }
        }),
        (r) => r.body.text
      )
      const [plain, custom] = server.requests
      assert.strictEqual(plain.url, "/v1/messages")
      assert.strictEqual(plain.headers["x-api-key"], API_KEY)
      assert.strictEqual(plain.headers["anthropic-version"], "2023-06-01")
      assert.strictEqual(plain.headers.authorization, undefined)
      assert.strictEqual(custom.headers["x-api-key"], API_KEY)
      assert.strictEqual(custom.headers["anthropic-version"], "2024-10-22")
      assert.strictEqual(custom.headers["anthropic-beta"], "b1")
    }).pipe(provideClient)
  )

  it.live("sends gemini credentials on a model path with a colon", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => json(response, 200, {}))
      const client = yield* UpstreamClient
      const upstream = upstreamAt(server.origin, { protocol: "gemini" })
      const response = yield* client.request({
        upstream,
        method: "POST",
        path: GeminiPaths.streamGenerateContent("gemini-2.5-flash"),
        body: new TextEncoder().encode("{}")
      })
      yield* response.body.cancel
      assert.strictEqual(server.requests[0].url, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
      assert.strictEqual(server.requests[0].headers["x-goog-api-key"], API_KEY)
      assert.strictEqual(server.requests[0].body, "{}")
    }).pipe(provideClient)
  )

  it.live("reads a body as bytes and as text", () =>
    Effect.gen(function* () {
      const bytes = Uint8Array.from({ length: 256 }, (_, i) => i)
      const server = yield* localServer((request, response) => {
        response.writeHead(200)
        response.end(request.url === "/v1/bytes" ? bytes : "héllo")
      })
      const client = yield* UpstreamClient
      const upstream = upstreamAt(`${server.origin}/v1`)
      const binary = yield* client.request({ upstream, method: "GET", path: "/bytes" })
      assert.deepStrictEqual([...(yield* binary.body.bytes)], [...bytes])
      const text = yield* client.request({ upstream, method: "GET", path: "/text" })
      assert.strictEqual(yield* text.body.text, "héllo")
    }).pipe(provideClient)
  )

  it.live("streams raw bytes chunk by chunk as the upstream writes them", () =>
    Effect.gen(function* () {
      let held: ServerResponse | undefined
      const server = yield* localServer((_, response) => {
        response.writeHead(200, { "content-type": "application/octet-stream" })
        response.write("first")
        held = response
      })
      const client = yield* UpstreamClient
      const response = yield* client.request({ upstream: upstreamAt(`${server.origin}/v1`), method: "GET", path: "/s" })
      const chunks = response.body.chunks()
      const first = yield* within(2_000, chunks.next())
      assert.strictEqual(new TextDecoder().decode(first.value as Uint8Array), "first")
      held?.write("second")
      const second = yield* within(2_000, chunks.next())
      assert.strictEqual(new TextDecoder().decode(second.value as Uint8Array), "second")
      held?.end("third")
      const rest = yield* Stream.fromAsyncIterable(chunks, (e) => e as UpstreamError).pipe(Stream.runCollect)
      assert.strictEqual(rest.map((chunk) => new TextDecoder().decode(chunk)).join(""), "third")
      assert.isTrue((yield* within(500, chunks.next())).done)
    }).pipe(provideClient)
  )

  it.live("fails with Malformed on invalid JSON", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end("{not json")
      })
      const client = yield* UpstreamClient
      const response = yield* client.request({ upstream: upstreamAt(`${server.origin}/v1`), method: "GET", path: "/x" })
      const error = yield* Effect.flip(response.body.json)
      assert.strictEqual(error.reason._tag, "Malformed")
      assert.isFalse(error.isRetryable)
    }).pipe(provideClient)
  )

  it.live("fails with ConnectFailed when the connection is refused", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const client = yield* UpstreamClient
      const error = yield* Effect.flip(
        client.request({ upstream: upstreamAt(`http://127.0.0.1:${port}/v1`), method: "GET", path: "/models" })
      )
      assert.strictEqual(error._tag, "UpstreamError")
      assert.strictEqual(error.upstream, "test-upstream")
      assert.strictEqual(error.reason._tag, "ConnectFailed")
      if (error.reason._tag === "ConnectFailed") assert.strictEqual(error.reason.code, "ECONNREFUSED")
      assert.isTrue(error.isRetryable)
      assertNoKey(error)
    }).pipe(provideClient)
  )

  it.live("fails with a headers Timeout when the upstream never answers", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const client = yield* UpstreamClient
      const error = yield* Effect.flip(
        client.request({
          upstream: upstreamAt(`${server.origin}/v1`, { timeoutMs: 250 }),
          method: "GET",
          path: "/slow"
        })
      )
      assert.strictEqual(error.reason._tag, "Timeout")
      if (error.reason._tag === "Timeout") {
        assert.strictEqual(error.reason.phase, "headers")
        assert.strictEqual(error.reason.timeoutMs, 250)
      }
      assert.isTrue(error.isRetryable)
      yield* within(2_000, server.requests[0].socketClosed)
    }).pipe(provideClient)
  )

  it.live("a per-request timeoutMs overrides the upstream's", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const client = yield* UpstreamClient
      const error = yield* Effect.flip(
        client.request({ upstream: upstreamAt(`${server.origin}/v1`), method: "GET", path: "/slow", timeoutMs: 200 })
      )
      assert.strictEqual(error.reason._tag === "Timeout" && error.reason.timeoutMs, 200)
    }).pipe(provideClient)
  )

  it.live("fails with a body Timeout when a stream goes silent, and frees the socket", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => {
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write("data: 1\n\n")
      })
      const client = yield* UpstreamClient
      const response = yield* client.request({
        upstream: upstreamAt(`${server.origin}/v1`, { idleTimeoutMs: 300 }),
        method: "POST",
        path: "/chat/completions",
        body: "{}"
      })
      const events = response.body.events()
      assert.strictEqual((yield* within(2_000, events.next())).value?.data, "1")
      const error = yield* within(
        3_000,
        events.next().then(
          () => undefined,
          (e: UpstreamError) => e
        )
      )
      assert.strictEqual(error?.reason._tag, "Timeout")
      if (error?.reason._tag === "Timeout") assert.strictEqual(error.reason.phase, "body")
      assert.isFalse(error?.isRetryable)
      yield* within(2_000, server.requests[0].socketClosed)
    }).pipe(provideClient)
  )

  it.live("fails with HttpStatus on 429, with retry-after, the vendor body and isRetryable", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) => {
        if (request.url === "/v1/ms") {
          return json(
            response,
            429,
            { error: { message: "slow down" } },
            { "retry-after-ms": "1500", "retry-after": "9" }
          )
        }
        if (request.url === "/v1/quota") {
          return json(response, 429, {
            error: { message: "You exceeded your current quota", code: "insufficient_quota" }
          })
        }
        json(
          response,
          429,
          { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } },
          { "retry-after": "7" }
        )
      })
      const client = yield* UpstreamClient
      const upstream = upstreamAt(`${server.origin}/v1`)
      const limited = yield* Effect.flip(
        client.request({ upstream, method: "POST", path: "/chat/completions", body: "{}" })
      )
      assert.strictEqual(limited.reason._tag, "HttpStatus")
      if (limited.reason._tag === "HttpStatus") {
        assert.strictEqual(limited.reason.status, 429)
        assert.strictEqual(limited.reason.retryAfter, 7)
        assert.include(limited.reason.body, "Rate limit reached")
        assert.isTrue(limited.reason.isRetryable)
      }
      assert.isTrue(limited.isRetryable)
      assert.include(limited.message, "HTTP 429")
      const millis = yield* Effect.flip(client.request({ upstream, method: "GET", path: "/ms" }))
      assert.strictEqual(millis.reason._tag === "HttpStatus" && millis.reason.retryAfter, 1.5)
      const quota = yield* Effect.flip(client.request({ upstream, method: "GET", path: "/quota" }))
      assert.isFalse(quota.isRetryable)
      assert.strictEqual(quota.reason._tag === "HttpStatus" && quota.reason.retryAfter, undefined)
    }).pipe(provideClient)
  )

  it.live("reads retry-after given as an HTTP date against the clock", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) =>
        json(response, 503, {}, { "retry-after": new Date(Date.now() + 30_000).toUTCString() })
      )
      const client = yield* UpstreamClient
      const error = yield* Effect.flip(
        client.request({ upstream: upstreamAt(`${server.origin}/v1`), method: "GET", path: "/" })
      )
      const retryAfter = error.reason._tag === "HttpStatus" ? error.reason.retryAfter : undefined
      assert.isTrue(retryAfter !== undefined && retryAfter >= 28 && retryAfter <= 31, String(retryAfter))
    }).pipe(provideClient)
  )

  it.live("classifies 500, 529 and 400, honours x-should-retry, truncates and scrubs the vendor body", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) => {
        switch (request.url) {
          case "/v1/500":
            return json(response, 500, { error: { message: "boom" } })
          case "/v1/529":
            return json(response, 529, { type: "error", error: { type: "overloaded_error", message: "Overloaded" } })
          case "/v1/400":
            return json(response, 400, { error: { message: `Incorrect API key provided: ${API_KEY}` } })
          case "/v1/no-retry":
            return json(response, 503, {}, { "x-should-retry": "false" })
          default:
            response.writeHead(502)
            response.end("x".repeat(100_000))
        }
      })
      const client = yield* UpstreamClient
      const upstream = upstreamAt(`${server.origin}/v1`)
      const fail = (path: string) => Effect.flip(client.request({ upstream, method: "GET", path }))
      const status = (error: UpstreamError) => (error.reason._tag === "HttpStatus" ? error.reason : undefined)

      const e500 = yield* fail("/500")
      assert.strictEqual(status(e500)?.status, 500)
      assert.isTrue(e500.isRetryable)
      assert.include(status(e500)?.body, "boom")
      assert.isTrue((yield* fail("/529")).isRetryable)
      assert.isFalse((yield* fail("/no-retry")).isRetryable)

      const e400 = yield* fail("/400")
      assert.isFalse(e400.isRetryable)
      assert.include(status(e400)?.body, "Incorrect API key provided: <redacted>")
      assertNoKey(e400)

      const huge = yield* fail("/huge")
      assert.strictEqual(status(huge)?.body.length, ERROR_BODY_LIMIT + 1)
      assert.isTrue(status(huge)?.body.endsWith("…"))
    }).pipe(provideClient)
  )

  it.live("interrupting a request that waits for headers aborts it and closes the socket", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const client = yield* UpstreamClient
      const fiber = yield* Effect.forkChild(
        client.request({
          upstream: upstreamAt(`${server.origin}/v1`),
          method: "POST",
          path: "/chat/completions",
          body: "{}"
        })
      )
      const seen = yield* server.received(1)
      yield* Fiber.interrupt(fiber)
      yield* within(2_000, seen.socketClosed)
    }).pipe(provideClient)
  )

  it.live("interrupting the consumer of an endless SSE stream aborts the upstream request", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => {
        response.writeHead(200, { "content-type": "text/event-stream" })
        response.write('data: {"n":1}\n\n')
      })
      const client = yield* UpstreamClient
      const firstEvent = yield* Deferred.make<string>()
      const fiber = yield* Effect.forkChild(
        Effect.gen(function* () {
          const response = yield* client.request({
            upstream: upstreamAt(`${server.origin}/v1`),
            method: "POST",
            path: "/chat/completions",
            body: "{}"
          })
          yield* Stream.fromAsyncIterable(response.body.events(), (e) => e as UpstreamError).pipe(
            Stream.runForEach((event) => Deferred.succeed(firstEvent, event.data))
          )
        })
      )
      assert.strictEqual(yield* Deferred.await(firstEvent), '{"n":1}')
      yield* Fiber.interrupt(fiber)
      yield* within(2_000, server.requests[0].socketClosed)
    }).pipe(provideClient)
  )

  it.live("interrupting a whole-body read, or cancelling the body, closes the socket", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => {
        response.writeHead(200)
        response.write("partial")
      })
      const client = yield* UpstreamClient
      const upstream = upstreamAt(`${server.origin}/v1`)
      const reading = yield* client.request({ upstream, method: "GET", path: "/a" })
      const fiber = yield* Effect.forkChild(reading.body.text)
      yield* Effect.sleep(50)
      yield* Fiber.interrupt(fiber)
      yield* within(2_000, server.requests[0].socketClosed)

      const cancelled = yield* client.request({ upstream, method: "GET", path: "/b" })
      yield* cancelled.body.cancel
      yield* within(2_000, server.requests[1].socketClosed)
    }).pipe(provideClient)
  )

  it.live("a caller's AbortSignal aborts the request with reason Aborted", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const client = yield* UpstreamClient
      const controller = new AbortController()
      const fiber = yield* Effect.forkChild(
        Effect.flip(
          client.request({
            upstream: upstreamAt(`${server.origin}/v1`),
            method: "GET",
            path: "/",
            signal: controller.signal
          })
        )
      )
      yield* server.received(1)
      controller.abort()
      const error = yield* Fiber.join(fiber)
      assert.strictEqual(error.reason._tag, "Aborted")
      yield* within(2_000, server.requests[0].socketClosed)
    }).pipe(provideClient)
  )

  it.live("closing the layer's scope closes the pooled keep-alive connections", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => json(response, 200, {}))
      yield* Effect.gen(function* () {
        const client = yield* UpstreamClient
        const response = yield* client.request({
          upstream: upstreamAt(`${server.origin}/v1`),
          method: "GET",
          path: "/"
        })
        yield* response.body.json
      }).pipe(provideClient)
      yield* within(2_000, server.requests[0].socketClosed)
    })
  )

  it.live("never shows the API key in a redacted upstream config", () =>
    Effect.sync(() => {
      const upstream = upstreamAt("http://127.0.0.1:1/v1", { apiKey: Redacted.make(API_KEY) })
      assert.notInclude(JSON.stringify(upstream), API_KEY)
      assert.notInclude(String(upstream.apiKey), API_KEY)
    })
  )
})
