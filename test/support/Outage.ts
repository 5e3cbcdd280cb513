/**
 * A database outage for tests: a TCP proxy in front of the real Postgres that, when `down`, drops every connection
 * and refuses new ones; `up` serves again on the same port.
 */
import { connect, createServer, type Server, type Socket } from "node:net"

export class Outage {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()
  constructor(
    private readonly target: { host: string; port: number },
    readonly port: number
  ) {}
  up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host)
      this.sockets.add(client).add(upstream)
      client.pipe(upstream).pipe(client)
      const close = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on("error", close).on("close", close)
      upstream.on("error", close).on("close", close)
    })
    this.server = server
    return new Promise((resolve) => server.listen(this.port, "127.0.0.1", () => resolve()))
  }
  down(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    this.sockets.clear()
    const server = this.server
    return new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
  }
}
