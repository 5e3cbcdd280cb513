/**
 * Plain node:http servers for the CLI's network paths that need no gateway: a closed port (server down) and a
 * server answering 401 the way the admin API does.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type Server } from "node:http"
import type { AddressInfo } from "node:net"

export interface SeenRequest {
  readonly method: string | undefined
  readonly url: string | undefined
  readonly authorization: string | undefined
}

const listen = (server: Server) =>
  Effect.callback<number>((resume) => {
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as AddressInfo).port)))
  })

const close = (server: Server) =>
  Effect.callback<void>((resume) => {
    server.closeAllConnections()
    server.close(() => resume(Effect.void))
  })

/** A port that was just in use and is now closed: connecting to it is refused. */
export const closedPort = Effect.gen(function* () {
  const server = createServer()
  const port = yield* listen(server)
  yield* close(server)
  return port
})

/** Answers every request with the admin API's 401 envelope; the URL and the requests it saw are returned. */
export const unauthorizedServer = Effect.acquireRelease(
  Effect.gen(function* () {
    const seen: Array<SeenRequest> = []
    const server = createServer((request: IncomingMessage, response) => {
      seen.push({ method: request.method, url: request.url, authorization: request.headers.authorization })
      request.resume()
      response.writeHead(401, { "content-type": "application/json" })
      response.end(
        JSON.stringify({
          error: { message: "invalid admin token", type: "authentication_error", param: null, code: "invalid_token" }
        })
      )
    })
    const port = yield* listen(server)
    return { url: `http://127.0.0.1:${port}`, seen, server }
  }),
  ({ server }) => close(server)
)
