/**
 * A rerank vendor on loopback, for trying the plugin and for its tests: `POST /v1/rerank` in the shape Cohere, Jina
 * and Voyage share. Relevance is the share of the query's words a document contains, so answers are deterministic;
 * it reports the search units it billed as Cohere does (`meta.billed_units.search_units`).
 *
 * Models that misbehave on purpose: `rerank-busy` answers 503, `rerank-refuse` answers 400.
 *
 *   npx tsx examples/plugin-rerank/simulator.ts   # prints the base URL (…/v1) to put in the operator config
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { CHARACTERS_PER_DOCUMENT, DOCUMENTS_PER_UNIT } from "./index.ts"

export interface RerankSimulator {
  /** The base URL for the operator config, ending in `/v1`. */
  readonly url: string
  /** Requests received, newest last (bodies as parsed). */
  readonly received: ReadonlyArray<Record<string, unknown>>
  readonly close: () => Promise<void>
}

const wordsOf = (text: string): ReadonlyArray<string> => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []

/** The share of the query's distinct words found in the document, rounded to 4 places. */
export const relevance = (query: string, document: string): number => {
  const wanted = new Set(wordsOf(query))
  if (wanted.size === 0) return 0
  const present = new Set(wordsOf(document))
  const found = [...wanted].filter((word) => present.has(word)).length
  return Math.round((found / wanted.size) * 10_000) / 10_000
}

const send = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(JSON.stringify(body))
}

const readBody = (request: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    request.on("error", reject)
  })

const answer = (body: Record<string, unknown>): { readonly status: number; readonly body: unknown } => {
  const { model, query, documents, top_n: topN } = body
  if (model === "rerank-busy") return { status: 503, body: { message: "the model is overloaded" } }
  if (model === "rerank-refuse") return { status: 400, body: { message: "the request was refused" } }
  if (typeof query !== "string" || !Array.isArray(documents) || !documents.every((d) => typeof d === "string")) {
    return { status: 400, body: { message: "query and documents (strings) are required" } }
  }
  const ranked = documents
    .map((document: string, index) => ({ index, relevance_score: relevance(query, document) }))
    .sort((a, b) => b.relevance_score - a.relevance_score || a.index - b.index)
  const chunks = documents.reduce(
    (sum: number, document: string) => sum + Math.max(1, Math.ceil(document.length / CHARACTERS_PER_DOCUMENT)),
    0
  )
  return {
    status: 200,
    body: {
      id: `sim-${ranked.length}`,
      results: typeof topN === "number" ? ranked.slice(0, topN) : ranked,
      meta: { billed_units: { search_units: Math.ceil(chunks / DOCUMENTS_PER_UNIT) } }
    }
  }
}

/** Starts the simulator on loopback (`port` 0 = any free port), accepting `apiKey` as its bearer token. */
export const startRerankSimulator = (
  options: { readonly port?: number; readonly apiKey?: string } = {}
): Promise<RerankSimulator> => {
  const apiKey = options.apiKey ?? "sim-rerank-key"
  const received: Array<Record<string, unknown>> = []
  const server = createServer((request, response) => {
    if (request.method !== "POST" || request.url !== "/v1/rerank") {
      send(response, 404, { message: `no route ${request.method} ${request.url}` })
      return
    }
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      send(response, 401, { message: "invalid api key" })
      return
    }
    readBody(request)
      .then((text) => {
        const parsed: unknown = JSON.parse(text)
        if (typeof parsed !== "object" || parsed === null) return send(response, 400, { message: "expected JSON" })
        received.push(parsed as Record<string, unknown>)
        const { status, body } = answer(parsed as Record<string, unknown>)
        send(response, status, body)
      })
      .catch(() => send(response, 400, { message: "expected a JSON body" }))
  })
  return new Promise((resolve) => {
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}/v1`,
        received,
        close: () => new Promise<void>((done) => server.close(() => done()))
      })
    })
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  startRerankSimulator({ port: Number(process.env.PORT ?? 0) }).then((simulator) => {
    console.log(`rerank simulator: ${simulator.url} (api key: sim-rerank-key)`)
  })
}
