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

/** An outage proxy on `port`, serving, in front of the database at `databaseUrl`; and that database's URL through it. */
export const outageBefore = async (
  databaseUrl: string,
  port: number
): Promise<{ readonly outage: Outage; readonly url: string }> => {
  const target = new URL(databaseUrl)
  const outage = new Outage({ host: target.hostname, port: Number(target.port || 5432) }, port)
  await outage.up()
  const through = new URL(databaseUrl)
  through.hostname = "127.0.0.1"
  through.port = String(port)
  return { outage, url: through.toString() }
}
