/**
 * A fake vendor on loopback for the contract test, speaking Acme's made-up protocol: `POST /v1/generate` with the key
 * in an `x-acme-key` header and `{ model, messages: [{ role, text }], max_new_tokens }`; it answers NDJSON, one JSON
 * object per line — `{"type":"token","text":…}` per word, then `{"type":"done","stop":"end"|"length","usage":{"prompt","generated"}}`.
 * It repeats the last message, word by word (one word is one token). Model `refuse` answers 400, `broken` 500, and
 * `cut` fails mid-stream with an `{"type":"error"}` line.
 */
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export const VENDOR_KEY = "fake-acme-key"

const words = (text: string) => text.split(/\s+/).filter((word) => word !== "")

export const startVendor = async () => {
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as {
        model?: string
        messages?: Array<{ role: string; text: string }>
        max_new_tokens?: number
      }
      const fail = (status: number, message: string) =>
        response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: message }))
      if (request.headers["x-acme-key"] !== VENDOR_KEY) return fail(401, "bad key")
      if (body.model === "refuse") return fail(400, "acme cannot take this prompt (internal rule 7)")
      if (body.model === "broken") return fail(500, "acme shard 7 is on fire")
      const messages = body.messages ?? []
      const prompt = messages.reduce((sum, message) => sum + words(message.text).length, 0)
      const said = words(messages.at(-1)?.text ?? "")
      const max = body.max_new_tokens ?? said.length
      const generated = said.slice(0, max)
      response.writeHead(200, { "content-type": "application/x-ndjson" })
      for (const word of generated) response.write(`${JSON.stringify({ type: "token", text: word })}\n`)
      if (body.model === "cut") return response.end(`${JSON.stringify({ type: "error", message: "acme lost the GPU" })}\n`)
      const stop = said.length > max ? "length" : "end"
      response.end(`${JSON.stringify({ type: "done", stop, usage: { prompt, generated: generated.length } })}\n`)
    })
  })
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", listening))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((closed) => server.close(() => closed()))
  }
}
