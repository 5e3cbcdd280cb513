/**
 * The HTTP capability plugins get: requests go to the gateway's own copy of the named upstream with its key, and a
 * streamed body (NDJSON here) is read as it arrives, a stalled one failing with a PluginFailure under the idle timeout.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { UpstreamClient } from "../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamConfig } from "../../src/app/config/OperatorConfigData.ts"
import { pluginUpstream } from "../../src/app/PluginBoundary.ts"
import { makeUpstreamHttp } from "../../src/plugins/UpstreamHttp.ts"

let server: Server
let scope: Scope.Closeable
let client: UpstreamClient["Service"]
let upstream: UpstreamConfig
const seenKeys: Array<string | undefined> = []
const seen: Array<{ readonly url: string | undefined; readonly headers: Record<string, unknown> }> = []

beforeAll(async () => {
  server = createServer((request, response) => {
    seenKeys.push(request.headers.authorization)
    seen.push({ url: request.url, headers: { ...request.headers } })
    if (request.url?.endsWith("/refuse")) {
      response.writeHead(400, { "content-type": "application/json" })
      response.end('{"error":{"message":"acme internal rule 7 (vendor-key) forbids this"}}')
      return
    }
    response.writeHead(200, { "content-type": "application/x-ndjson" })
    if (request.url?.endsWith("/stall")) {
      response.write('{"delta":"first"}\n')
      return // never ends: the idle timeout must
    }
    let sent = 0
    const timer = setInterval(() => {
      response.write(`${JSON.stringify({ delta: `part ${sent}` })}\n`)
      if (++sent === 3) {
        clearInterval(timer)
        response.end()
      }
    }, 10)
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  upstream = {
    name: "ndjson-vendor",
    protocol: "openai",
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    apiKey: Redacted.make("vendor-key"),
    timeoutMs: 2_000,
    idleTimeoutMs: 300,
    maxConnections: 2
  }
  scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(UpstreamClient.layer, scope))
  client = context.mapUnsafe.get(UpstreamClient.key) as UpstreamClient["Service"]
})

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  server.closeAllConnections()
  await new Promise((closed) => server.close(closed))
})

const lines = async (chunks: AsyncIterableIterator<Uint8Array>) => {
  const decoder = new TextDecoder()
  let text = ""
  for await (const chunk of chunks) text += decoder.decode(chunk, { stream: true })
  return text.split("\n").filter((line) => line !== "")
}

describe("the plugins' HTTP capability", () => {
  it("streams a body as it arrives, to the gateway's copy of the upstream the plugin names, with its key", async () => {
    const http = makeUpstreamHttp(client, new Map([[upstream.name, upstream]]))
    const response = await Effect.runPromise(
      http.request({
        upstream: pluginUpstream(upstream),
        method: "POST",
        path: "/stream",
        body: "{}",
        signal: new AbortController().signal
      })
    )
    assert.deepStrictEqual(await lines(response.chunks()), [
      '{"delta":"part 0"}',
      '{"delta":"part 1"}',
      '{"delta":"part 2"}'
    ])
    assert.strictEqual(seenKeys.at(-1), "Bearer vendor-key")
  })

  it("fails a stalled stream with a PluginFailure (timeout) under the upstream's idle timeout", async () => {
    const http = makeUpstreamHttp(client, new Map([[upstream.name, upstream]]))
    const response = await Effect.runPromise(
      http.request({
        upstream: pluginUpstream(upstream),
        method: "POST",
        path: "/stall",
        body: "{}",
        signal: new AbortController().signal
      })
    )
    const failure = await lines(response.chunks()).then(
      () => undefined,
      (error: unknown) => error as { _tag: string; reason: string }
    )
    assert.strictEqual(failure?._tag, "PluginFailure")
    assert.strictEqual(failure?.reason, "timeout")
  })

  it("sends the key as the upstream's auth scheme says, for a plugin's own protocol too", async () => {
    const acme: UpstreamConfig = {
      ...upstream,
      name: "acme",
      protocol: "acme-ndjson",
      auth: { scheme: "header", name: "X-Acme-Key" }
    }
    const keyed: UpstreamConfig = { ...upstream, name: "keyed", auth: { scheme: "query", name: "key" } }
    const http = makeUpstreamHttp(
      client,
      new Map([
        [acme.name, acme],
        [keyed.name, keyed]
      ])
    )
    for (const target of [acme, keyed]) {
      const response = await Effect.runPromise(
        http.request({
          upstream: pluginUpstream(target),
          method: "POST",
          path: "/stream?x=1",
          body: "{}",
          signal: new AbortController().signal
        })
      )
      await lines(response.chunks())
    }
    const [byHeader, byQuery] = seen.slice(-2)
    assert.strictEqual(byHeader?.headers["x-acme-key"], "vendor-key")
    assert.isUndefined(byHeader?.headers.authorization)
    assert.strictEqual(byQuery?.url, "/v1/stream?x=1&key=vendor-key")
    assert.isUndefined(byQuery?.headers.authorization)
  })

  it("words a vendor's refusal of the request in the gateway's terms, its body (key taken out) in detail only", async () => {
    const http = makeUpstreamHttp(client, new Map([[upstream.name, upstream]]))
    const exit = await Effect.runPromise(
      Effect.exit(
        http.request({
          upstream: pluginUpstream(upstream),
          method: "POST",
          path: "/refuse",
          body: "{}",
          signal: new AbortController().signal
        })
      )
    )
    assert.isTrue(Exit.isFailure(exit))
    const failure = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : undefined
    const value = failure !== undefined && Option.isSome(failure) ? failure.value : undefined
    assert.strictEqual(value?.reason, "invalid_request")
    assert.strictEqual(value?.message, "the upstream rejected the request (HTTP 400)")
    assert.strictEqual(value?.upstreamStatus, 400)
    assert.include(value?.detail ?? "", "internal rule 7")
    assert.notInclude(value?.detail ?? "", "vendor-key")
  })

  it("refuses an upstream the operator config does not declare", async () => {
    const http = makeUpstreamHttp(client, new Map())
    const exit = await Effect.runPromise(
      Effect.exit(
        http.request({
          upstream: pluginUpstream(upstream),
          method: "GET",
          path: "/",
          signal: new AbortController().signal
        })
      )
    )
    assert.isTrue(Exit.isFailure(exit))
    assert.strictEqual(seenKeys.length, 5, "nothing was sent")
  })
})
