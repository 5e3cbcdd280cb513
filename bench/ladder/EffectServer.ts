/**
 * The ladder's second rung: Effect's HTTP server (`HttpRouter.serve` on `NodeHttpServer`, as the gateway serves)
 * with one route that relays the body to the upstream through the same undici `Pool` as the floor and answers with
 * the upstream's bytes. No auth, no parsing, no billing: what Effect's server costs over the bare node:http floor.
 *
 *   UPSTREAM=http://127.0.0.1:port PORT=0 tsx bench/ladder/EffectServer.ts    # prints `listening <port>`
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import { Pool } from "undici"

const upstream = process.env.UPSTREAM ?? "http://127.0.0.1:8081"
const port = Number(process.env.PORT ?? 0)
const pool = new Pool(upstream, { connections: 2048, pipelining: 1, keepAliveTimeout: 60_000 })

const relay = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const body = new Uint8Array(yield* Effect.orDie(request.arrayBuffer))
  const answer = yield* Effect.promise((signal) =>
    pool
      .request({
        method: "POST",
        path: request.url,
        headers: { "content-type": "application/json" },
        body,
        signal
      })
      .then(async (response) => ({
        status: response.statusCode,
        contentType: String(response.headers["content-type"] ?? "application/json"),
        bytes: new Uint8Array(await response.body.arrayBuffer())
      }))
  )
  return HttpServerResponse.uint8Array(answer.bytes, { status: answer.status, contentType: answer.contentType })
})

const routes = Layer.mergeAll(
  HttpRouter.add("POST", "/v1/chat/completions", relay),
  HttpRouter.add("POST", "/v1/messages", relay),
  HttpRouter.add("GET", "/", Effect.succeed(HttpServerResponse.text("ok")))
)

const server = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provideMerge(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" }))
)

Layer.launch(
  Layer.mergeAll(server, Layer.effectDiscard(Effect.sync(() => process.stdout.write(`listening ${port}\n`))))
).pipe(NodeRuntime.runMain)
