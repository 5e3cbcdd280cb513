/**
 * A POST read with node:http, which hands over what `fetch` drops: the HTTP trailers that follow a chunked body
 * (where a streamed reply says what it cost).
 */
import { request } from "node:http"
import { connect } from "node:net"

export interface RawReply {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly text: string
  readonly trailers: Readonly<Record<string, string | undefined>>
}

export const postRaw = (url: string, headers: Readonly<Record<string, string>>, body: unknown): Promise<RawReply> =>
  new Promise((resolve, reject) => {
    const payload = JSON.stringify(body)
    const outgoing = request(
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(payload)),
          ...headers
        }
      },
      (response) => {
        let text = ""
        response.setEncoding("utf8")
        response.on("data", (chunk: string) => (text += chunk))
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, headers: response.headers, text, trailers: response.trailers })
        )
        response.on("error", reject)
      }
    )
    outgoing.on("error", reject)
    outgoing.end(payload)
  })

/** The whole exchange of one HTTP/1.0 request on a raw socket (Node's client speaks only 1.1): status line to close. */
export const postHttp10 = (url: string, headers: Readonly<Record<string, string>>, body: unknown): Promise<string> =>
  new Promise((resolve, reject) => {
    const { hostname, port, pathname, search } = new URL(url)
    const payload = JSON.stringify(body)
    const head = Object.entries({
      ...headers,
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(payload))
    })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("")
    const socket = connect(Number(port), hostname, () =>
      socket.write(`POST ${pathname}${search} HTTP/1.0\r\nhost: ${hostname}\r\n${head}\r\n${payload}`)
    )
    let text = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (text += chunk))
    socket.on("end", () => resolve(text))
    socket.on("error", reject)
  })
