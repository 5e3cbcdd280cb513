/**
 * The floor: a bare pass-through proxy (node:http server + one undici `Pool` to the mock), no auth, no billing, no
 * parsing. Whatever the gateway costs above this is the gateway's own work. Bodies are relayed as bytes, responses
 * streamed chunk by chunk as they arrive.
 *
 *   UPSTREAM=http://127.0.0.1:port PORT=0 tsx bench/suite/FloorProxy.ts    # prints `listening <port>`
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Pool } from "undici"

const upstream = process.env.UPSTREAM ?? "http://127.0.0.1:8081"
const pool = new Pool(upstream, { connections: 2048, pipelining: 1, keepAliveTimeout: 60_000 })

const hopByHop = new Set(["connection", "keep-alive", "transfer-encoding", "host", "content-length"])

const server = createServer((request, response) => {
  const parts: Array<Buffer> = []
  request.on("data", (part: Buffer) => parts.push(part))
  request.on("end", () => {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(request.headers)) {
      if (!hopByHop.has(name) && typeof value === "string") headers[name] = value
    }
    pool
      .request({
        method: (request.method ?? "GET") as "POST",
        path: request.url ?? "/",
        headers,
        body: Buffer.concat(parts)
      })
      .then(
        (upstreamResponse) => {
          const out: Record<string, string> = {}
          for (const [name, value] of Object.entries(upstreamResponse.headers)) {
            if (!hopByHop.has(name) && typeof value === "string") out[name] = value
          }
          response.writeHead(upstreamResponse.statusCode, out)
          upstreamResponse.body.on("data", (chunk: Buffer) => response.write(chunk))
          upstreamResponse.body.on("end", () => response.end())
          upstreamResponse.body.on("error", () => response.destroy())
          response.on("close", () => upstreamResponse.body.destroy())
        },
        () => {
          response.writeHead(502).end()
        }
      )
  })
})
server.keepAliveTimeout = 60_000
server.maxRequestsPerSocket = 0
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`)
})
