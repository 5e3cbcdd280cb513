import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, Redacted, type Scope } from "effect"
import type { UpstreamConfig, UpstreamProtocol } from "../../../src/app/OperatorConfig.ts"

export interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingMessage["headers"]
  readonly body: string
  /** Resolves when the socket that carried this request closes. */
  readonly socketClosed: Promise<void>
}

export interface LocalServer {
  readonly origin: string
  readonly requests: Array<SeenRequest>
  /** Sockets accepted so far. */
  readonly connections: () => number
  /** Resolves once `n` requests have arrived. */
  readonly received: (n: number) => Effect.Effect<SeenRequest>
}

export type Handler = (request: IncomingMessage, response: ServerResponse, body: string) => void

/** A node:http server on 127.0.0.1 and a free port, closed with the scope. */
export const localServer = (handler: Handler): Effect.Effect<LocalServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.callback<{ readonly server: Server; readonly local: LocalServer }>((resume) => {
      const requests: Array<SeenRequest> = []
      const waiting: Array<() => void> = []
      let connections = 0
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8")
          const socket = request.socket
          const socketClosed = socket.destroyed
            ? Promise.resolve()
            : new Promise<void>((resolve) => socket.once("close", () => resolve()))
          requests.push({
            method: request.method ?? "",
            url: request.url ?? "",
            headers: request.headers,
            body,
            socketClosed
          })
          for (const wake of waiting.splice(0)) wake()
          handler(request, response, body)
        })
      })
      server.on("connection", () => {
        connections++
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        const received = (n: number): Effect.Effect<SeenRequest> =>
          Effect.callback<SeenRequest>((resumeWait) => {
            const check = () => {
              if (requests.length >= n) resumeWait(Effect.succeed(requests[n - 1]))
              else waiting.push(check)
            }
            check()
          })
        const local = { origin: `http://127.0.0.1:${port}`, requests, connections: () => connections, received }
        resume(Effect.succeed({ server, local }))
      })
    }),
    ({ server }) =>
      Effect.callback<void>((resume) => {
        server.closeAllConnections()
        server.close(() => resume(Effect.void))
      })
  ).pipe(Effect.map(({ local }) => local))

export const API_KEY = "sk-test-SECRET-0123456789"

export const upstreamAt = (
  baseUrl: string,
  options: Partial<Omit<UpstreamConfig, "baseUrl">> & { readonly protocol?: UpstreamProtocol } = {}
): UpstreamConfig => ({
  name: options.name ?? "test-upstream",
  protocol: options.protocol ?? "openai",
  baseUrl,
  apiKey: options.apiKey ?? Redacted.make(API_KEY),
  timeoutMs: options.timeoutMs ?? 5_000,
  idleTimeoutMs: options.idleTimeoutMs ?? 5_000,
  maxConnections: options.maxConnections ?? 4
})

/** Resolves `promise`, failing the test if it takes longer than `ms`. */
export const within = <A>(ms: number, promise: Promise<A>): Effect.Effect<A> =>
  Effect.promise(() => promise).pipe(
    Effect.timeoutOrElse({ duration: ms, orElse: () => Effect.die(new Error(`not settled within ${ms} ms`)) })
  )
