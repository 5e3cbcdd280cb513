/** A fake vendor on loopback for the contract test: `POST /__KIND__` with a bearer key; model `refuse` answers 400. */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export const VENDOR_KEY = "fake-vendor-key"

export const startVendor = async () => {
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { model?: string; input?: Array<string> }
      const answer = (status: number, value: unknown) =>
        response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value))
      if (request.headers.authorization !== `Bearer ${VENDOR_KEY}`) return answer(401, { error: { message: "bad key" } })
      if (body.model === "refuse") return answer(400, { error: { message: "refused" } })
      return answer(200, { results: (body.input ?? []).map(() => ({ flagged: false })) })
    })
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((closed) => server.close(() => closed()))
  }
}
