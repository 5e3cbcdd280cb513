import { createServer } from "node:net"

/**
 * A loopback port nothing listens on right now: bound to port 0, read, closed. A test uses it for a server it starts
 * next (a child gateway) or for an upstream that must refuse connections.
 */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })
