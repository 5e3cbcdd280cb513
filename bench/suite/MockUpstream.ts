/**
 * The upstream the suite measures against: a bare node:http server that answers at once with prebuilt bodies, so
 * nearly all the CPU of a scenario is spent in the server under test. OpenAI chat completions (non-streamed, or 20
 * SSE chunks plus the usage chunk) and Anthropic messages (non-streamed or streamed). A request for the upstream
 * model `mock-hold` is streamed too but held open after its first chunk for `holdMs` (the open-streams scenario). A
 * request for `mock-think` is answered like any other after `thinkMs` with nothing sent, as a vendor thinks before its
 * first byte (the ladder's first-byte rung).
 *
 *   tsx bench/suite/MockUpstream.ts            # listens on PORT (default 0) and prints `listening <port>`
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export const CHUNKS = 20
const created = 1_700_000_000
const usage = { prompt_tokens: 12, completion_tokens: CHUNKS, total_tokens: 12 + CHUNKS }

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`
const anthropicEvent = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify(data)}\n\n`

const openAiBody = (model: string) =>
  Buffer.from(
    JSON.stringify({
      id: "chatcmpl-mock",
      object: "chat.completion",
      created,
      model,
      choices: [
        {
          index: 0,
          message: { role: "assistant", content: "tok ".repeat(CHUNKS).trim(), refusal: null },
          logprobs: null,
          finish_reason: "stop"
        }
      ],
      usage
    })
  )

const openAiChunk = (model: string, delta: Record<string, unknown>, finish: string | null) =>
  sse({
    id: "chatcmpl-mock",
    object: "chat.completion.chunk",
    created,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }]
  })

/** The first chunk alone, then the rest (19 more content chunks, the usage chunk and `[DONE]`). */
const openAiStream = (model: string): [Buffer, Buffer] => {
  const first = openAiChunk(model, { role: "assistant", content: "tok " }, null)
  let rest = ""
  for (let i = 1; i < CHUNKS; i++) {
    rest += openAiChunk(model, { content: "tok " }, i === CHUNKS - 1 ? "stop" : null)
  }
  rest += sse({ id: "chatcmpl-mock", object: "chat.completion.chunk", created, model, choices: [], usage })
  rest += "data: [DONE]\n\n"
  return [Buffer.from(first), Buffer.from(rest)]
}

const anthropicBody = (model: string) =>
  Buffer.from(
    JSON.stringify({
      id: "msg_mock",
      type: "message",
      role: "assistant",
      model,
      content: [{ type: "text", text: "tok ".repeat(CHUNKS).trim() }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: CHUNKS }
    })
  )

const anthropicStream = (model: string): [Buffer, Buffer] => {
  const first =
    anthropicEvent("message_start", {
      type: "message_start",
      message: {
        id: "msg_mock",
        type: "message",
        role: "assistant",
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: 12, output_tokens: 1 }
      }
    }) +
    anthropicEvent("content_block_start", {
      type: "content_block_start",
      index: 0,
      content_block: { type: "text", text: "" }
    })
  let rest = ""
  for (let i = 0; i < CHUNKS; i++) {
    rest += anthropicEvent("content_block_delta", {
      type: "content_block_delta",
      index: 0,
      delta: { type: "text_delta", text: "tok " }
    })
  }
  rest += anthropicEvent("content_block_stop", { type: "content_block_stop", index: 0 })
  rest += anthropicEvent("message_delta", {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { output_tokens: CHUNKS }
  })
  rest += anthropicEvent("message_stop", { type: "message_stop" })
  return [Buffer.from(first), Buffer.from(rest)]
}

/** Bodies are built once per (model, shape); the mock then only parses the request and writes bytes. */
const cache = new Map<string, Buffer | [Buffer, Buffer]>()
const cached = <A extends Buffer | [Buffer, Buffer]>(key: string, build: () => A): A => {
  let value = cache.get(key)
  if (value === undefined) {
    value = build()
    cache.set(key, value)
  }
  return value as A
}

export interface MockOptions {
  readonly port?: number
  /** How long a `mock-hold` stream stays open after its first chunk. */
  readonly holdMs?: number
  /** How long a `mock-think` request waits before its first byte. */
  readonly thinkMs?: number
}

const answer = (request: IncomingMessage, response: ServerResponse, raw: Buffer, holdMs: number) => {
  let body: { model?: unknown; stream?: unknown }
  try {
    body = JSON.parse(raw.toString("utf8")) as { model?: unknown; stream?: unknown }
  } catch {
    response.writeHead(400, { "content-type": "application/json" }).end('{"error":{"message":"not JSON"}}')
    return
  }
  const model = typeof body.model === "string" ? body.model : "mock"
  const path = (request.url ?? "/").split("?")[0]
  const anthropic = path.endsWith("/messages")
  if (!anthropic && !path.endsWith("/chat/completions")) {
    response.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"no such path"}}')
    return
  }
  if (body.stream !== true) {
    const bytes = anthropic
      ? cached(`a:${model}`, () => anthropicBody(model))
      : cached(`o:${model}`, () => openAiBody(model))
    response.writeHead(200, { "content-type": "application/json", "content-length": bytes.length }).end(bytes)
    return
  }
  const [first, rest] = anthropic
    ? cached(`as:${model}`, () => anthropicStream(model))
    : cached(`os:${model}`, () => openAiStream(model))
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  if (model !== "mock-hold") {
    response.end(Buffer.concat([first, rest]))
    return
  }
  response.write(first)
  const timer = setTimeout(() => response.end(rest), holdMs)
  response.on("close", () => clearTimeout(timer))
}

const THINKING = Buffer.from('"mock-think"')

export const startMockUpstream = (options: MockOptions = {}): Promise<{ server: Server; port: number }> => {
  const holdMs = options.holdMs ?? 10_000
  const thinkMs = options.thinkMs ?? 50
  const server = createServer((request, response) => {
    const parts: Array<Buffer> = []
    request.on("data", (part: Buffer) => parts.push(part))
    request.on("end", () => {
      const raw = Buffer.concat(parts)
      if (raw.includes(THINKING)) setTimeout(() => answer(request, response, raw, holdMs), thinkMs)
      else answer(request, response, raw, holdMs)
    })
  })
  server.keepAliveTimeout = 60_000
  server.maxRequestsPerSocket = 0
  return new Promise((resolve) => {
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      resolve({ server, port: (server.address() as AddressInfo).port })
    })
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { port } = await startMockUpstream({
    port: Number(process.env.PORT ?? 0),
    holdMs: Number(process.env.MOCK_HOLD_MS ?? 10_000),
    thinkMs: Number(process.env.MOCK_THINK_MS ?? 50)
  })
  process.stdout.write(`listening ${port}\n`)
}
