/**
 * A logging proxy in front of a gateway, as a user would put one to see what a client really exchanged: every
 * request is forwarded as it came (body and trailers of the answer included) and kept with what its answer said it
 * cost — the `x-tollgate-cost` header of a JSON answer or the trailer of a stream.
 */
import { createServer, type IncomingHttpHeaders, request as forward } from "node:http"
import type { AddressInfo } from "node:net"

export interface Exchange {
  readonly method: string
  readonly path: string
  readonly requestBody: unknown
  readonly status: number
  readonly requestId: string | undefined
  /** What the answer said it cost: its header, or its trailer when it streamed. */
  readonly cost: string | undefined
  readonly contentType: string | undefined
  readonly responseText: string
}

export interface RecordingProxy {
  readonly url: string
  readonly exchanges: () => ReadonlyArray<Exchange>
  close(): Promise<void>
}

const parsed = (text: string): unknown => {
  if (text.length === 0) return undefined
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const one = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value?.[0]

export const startRecordingProxy = async (target: string): Promise<RecordingProxy> => {
  const recorded: Array<Exchange> = []
  const server = createServer((incoming, outgoing) => {
    const chunks: Array<Buffer> = []
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk))
    incoming.on("end", () => {
      const body = Buffer.concat(chunks)
      const headers: IncomingHttpHeaders = { ...incoming.headers, host: new URL(target).host }
      const upstream = forward(`${target}${incoming.url ?? "/"}`, { method: incoming.method, headers }, (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers)
        const text: Array<Buffer> = []
        answer.on("data", (chunk: Buffer) => {
          text.push(chunk)
          outgoing.write(chunk)
        })
        answer.on("end", () => {
          if (Object.keys(answer.trailers).length > 0) outgoing.addTrailers(answer.trailers)
          outgoing.end()
          recorded.push({
            method: incoming.method ?? "GET",
            path: incoming.url ?? "/",
            requestBody: parsed(body.toString("utf8")),
            status: answer.statusCode ?? 0,
            requestId: one(answer.headers["x-request-id"]),
            cost: one(answer.headers["x-tollgate-cost"]) ?? answer.trailers["x-tollgate-cost"],
            contentType: one(answer.headers["content-type"]),
            responseText: Buffer.concat(text).toString("utf8")
          })
        })
      })
      upstream.on("error", () => outgoing.destroy())
      outgoing.on("close", () => upstream.destroy())
      upstream.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    exchanges: () => [...recorded],
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
