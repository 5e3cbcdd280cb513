/**
 * The simulator's socket edge: a node:http server on loopback that routes to the pure dialect handlers and applies
 * the fault knobs while writing. This file wraps node:http, timers and sockets, so it is where callbacks, Promises
 * and the one try/catch around JSON.parse live.
 */
import { Effect } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { parseInSlices } from "../json/SlicedJson.ts"
import { makeReplyWriters } from "./ReplyWriters.ts"
import type { AudioReply } from "./audio/AudioReply.ts"
import { audioRoute } from "./audio/AudioRoutes.ts"
import { makeAudioTools } from "./audio/AudioTools.ts"
import { FAULT_HEADER, type FaultKnobs, resolveFaults } from "./Faults.ts"
import type { RawSimRequest } from "./images/EditInputs.ts"
import { forcedError } from "./ErrorEnvelopes.ts"
import { DEFAULT_REPLY_TOKENS } from "./Reply.ts"
import type { SimContext, SimReply } from "./SimResponse.ts"
import { DEFAULT_THINKING_SECRET } from "./ThinkingSignature.ts"
import type { FileReply } from "./video/VideoFiles.ts"
import { DEFAULT_VIDEO_MILLIS, makeVideoJobs } from "./video/VideoJobs.ts"
import { videoRoute } from "./video/VideoRoutes.ts"
import { notFound, type Route, route } from "./SimRoutes.ts"
import { vendorBatchRoute } from "./batches/VendorBatchRoutes.ts"
import { DEFAULT_BATCH_MILLIS, makeVendorBatchJobs } from "./batches/VendorBatchJobs.ts"

export interface SimulatorOptions {
  /** Default 127.0.0.1. */
  readonly host?: string | undefined
  /** Default 0: an ephemeral port. */
  readonly port?: number | undefined
  /** The key every vendor endpoint requires. Default `sk-sim-test-key`. */
  readonly apiKey?: string | undefined
  /** Knobs applied to every request until changed. */
  readonly faults?: FaultKnobs | undefined
  /** When set, other model names get the vendor's "model not found". */
  readonly models?: ReadonlyArray<string> | undefined
  /** Target length of text replies in tokens (default 24). */
  readonly replyTokens?: number | undefined
  readonly thinkingSecret?: string | undefined
  /** The shape of OpenAI tool-call ids (see `SimContext.toolCallIds`). */
  readonly toolCallIds?: "openai" | "kimi" | undefined
  /** The `created` timestamp in OpenAI replies; fixed so replies are byte-for-byte reproducible. */
  readonly createdSeconds?: number | undefined
  /** Simulated wall-clock time of a video task from submit to its end (default 20 000 ms; queued for the first 10%). */
  readonly videoMillis?: number | undefined
  /** The clock video tasks advance by (default the wall clock); a test can hold and step it to see each phase. */
  readonly videoClock?: (() => number) | undefined
  /** Wall-clock time from a vendor batch's submit to its results (default 2 000 ms; batches/VendorBatchJobs.ts). */
  readonly batchMillis?: number | undefined
}

export interface RecordedCall {
  readonly method: string
  readonly path: string
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: unknown
  /**
   * True once the caller closed the connection before the reply was complete (a client that gave up, or a gateway
   * that aborted its upstream call); a stream the simulator cut on purpose does not count.
   */
  readonly abandoned: boolean
}

export interface RunningSimulator {
  /** Host root, e.g. `http://127.0.0.1:41234` (OpenAI clients append `/v1`). */
  readonly baseUrl: string
  readonly port: number
  readonly apiKey: string
  /** Replace the instance knobs; with `times`, they apply to the next `times` requests only. */
  readonly setFaults: (knobs: FaultKnobs, times?: number) => void
  readonly clearFaults: () => void
  /** The most recent requests (up to 500), oldest first. */
  readonly calls: () => ReadonlyArray<RecordedCall>
  readonly clearCalls: () => void
  readonly close: () => Promise<void>
}

export const DEFAULT_API_KEY = "sk-sim-test-key"
const MAX_BODY_BYTES = 64 * 1024 * 1024
const MAX_RECORDED = 500

export const startSimulator = (options: SimulatorOptions = {}): Promise<RunningSimulator> => {
  const apiKey = options.apiKey ?? DEFAULT_API_KEY
  let counter = 0
  const context: SimContext = {
    apiKey,
    thinkingSecret: options.thinkingSecret ?? DEFAULT_THINKING_SECRET,
    createdSeconds: options.createdSeconds ?? 1_760_000_000,
    replyTokens: options.replyTokens ?? DEFAULT_REPLY_TOKENS,
    toolCallIds: options.toolCallIds,
    models: options.models,
    nextId: () => {
      counter += 1
      return counter.toString(36).padStart(8, "0")
    }
  }
  let instanceFaults: FaultKnobs = options.faults ?? {}
  let remainingFaulted: number | undefined
  let recorded: Array<RecordedCall> = []
  let closed = false
  const timers = new Set<NodeJS.Timeout>()
  let baseUrl = ""
  const videos = makeVideoJobs({
    videoMillis: options.videoMillis ?? DEFAULT_VIDEO_MILLIS,
    baseUrl: () => baseUrl,
    now: options.videoClock
  })
  const audio = makeAudioTools()
  const vendorBatches = makeVendorBatchJobs({ batchMillis: options.batchMillis ?? DEFAULT_BATCH_MILLIS })

  const later = (ms: number, run: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer)
      if (!closed) run()
    }, ms)
    timers.add(timer)
  }

  const cutOnPurpose = new WeakSet<ServerResponse>()
  const cut = (res: ServerResponse): void => {
    cutOnPurpose.add(res)
    res.destroy()
  }

  const takeInstanceFaults = (): FaultKnobs => {
    if (remainingFaulted === undefined) return instanceFaults
    if (remainingFaulted <= 0) {
      instanceFaults = {}
      remainingFaulted = undefined
      return instanceFaults
    }
    remainingFaulted -= 1
    return instanceFaults
  }

  const { writeJson, writeSse, writeFile, writeStream } = makeReplyWriters({ later, cut, isClosed: () => closed })

  const respond = (res: ServerResponse, request: RawSimRequest): void => {
    if (request.method === "GET" && request.path === "/health") {
      writeJson(res, { status: 200, headers: {}, body: { ok: true } }, {})
      return
    }
    const call = {
      method: request.method,
      path: request.path,
      headers: request.headers,
      body: request.body,
      abandoned: false
    }
    res.once("close", () => {
      if (!res.writableEnded && !cutOnPurpose.has(res)) call.abandoned = true
    })
    recorded.push(call)
    if (recorded.length > MAX_RECORDED) recorded = recorded.slice(-MAX_RECORDED)
    const faults = resolveFaults(
      takeInstanceFaults(),
      typeof request.headers[FAULT_HEADER] === "string" ? (request.headers[FAULT_HEADER] as string) : undefined
    )
    const batch = vendorBatchRoute(request, vendorBatches, baseUrl)
    const batchRoute: Route | undefined =
      batch === undefined
        ? undefined
        : { dialect: batch.dialect, handle: (_, ctx, __, cache) => batch.handle(ctx, cache) }
    const found = route(request) ?? batchRoute ?? videoRoute(request, videos) ?? audioRoute(request, audio)
    const send = (): void => {
      if (found === undefined) {
        writeJson(res, notFound(request), {})
        return
      }
      if (faults.status !== undefined) {
        const requestId = `req_sim${context.nextId()}`
        const retryAfter: Record<string, string> =
          faults.retryAfterSeconds === undefined
            ? {}
            : {
                "retry-after": String(Math.ceil(faults.retryAfterSeconds)),
                "retry-after-ms": String(Math.round(faults.retryAfterSeconds * 1000))
              }
        writeJson(
          res,
          {
            status: faults.status,
            headers: { ...retryAfter, "x-request-id": requestId, "request-id": requestId },
            body:
              found.forcedBody === undefined
                ? forcedError(found.dialect, faults.status, requestId)
                : found.forcedBody(faults.status, requestId)
          },
          { malformed: faults.malformed }
        )
        return
      }
      const write = (reply: SimReply | FileReply | AudioReply): void => {
        if (reply._tag === "Json") writeJson(res, reply, reply.status === 200 ? faults : {})
        else if (reply._tag === "File") writeFile(res, reply, faults)
        else if (reply._tag === "Stream") writeStream(res, reply, reply.status === 200 ? faults : {})
        else if (reply._tag === "Async") {
          reply.run().then(
            (settled) => {
              if (!closed && !res.destroyed) write(settled)
            },
            () => {
              if (!closed && !res.destroyed)
                writeJson(res, { status: 500, headers: {}, body: forcedError(found.dialect, 500, "req_sim_500") }, {})
            }
          )
        } else writeSse(res, reply, faults)
      }
      write(found.handle(request, context, faults.replyTokens ?? context.replyTokens, faults))
    }
    if (faults.latencyMs !== undefined && faults.latencyMs > 0) later(faults.latencyMs, send)
    else send()
  }

  const LARGE_BODY_CHARS = 4 * 1024 * 1024
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // Multipart bodies (image edits, uploads) are parsed from their bytes by their handler; any other body is JSON,
    // decoded as it arrives so a 30 MB prompt is never copied and decoded in one go on the event loop.
    const multipart = (req.headers["content-type"] ?? "").toLowerCase().startsWith("multipart/")
    const chunks: Array<Buffer> = []
    const decoder = new TextDecoder()
    const text: Array<string> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) return
      if (multipart) chunks.push(chunk)
      else text.push(decoder.decode(chunk, { stream: true }))
    })
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://simulator.invalid")
      const bytes = Buffer.concat(chunks)
      const raw = multipart ? "" : text.join("") + decoder.decode()
      const answer = (body: unknown, bodyInvalid: boolean) =>
        respond(res, {
          raw: bytes,
          method: req.method ?? "GET",
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body,
          bodyInvalid: bodyInvalid || size > MAX_BODY_BYTES
        })
      if (raw.length === 0) return answer(undefined, false)
      // A large body (a 30 MB prompt) is parsed a slice at a time, so the gateway sharing this process keeps
      // answering meanwhile.
      if (raw.length > LARGE_BODY_CHARS) {
        Effect.runPromise(parseInSlices(raw)).then(
          (body) => answer(body, false),
          () => answer(undefined, true)
        )
        return
      }
      // JSON.parse is the one non-Effect call here that throws on bad input.
      try {
        answer(JSON.parse(raw), false)
      } catch {
        answer(undefined, true)
      }
    })
  })
  server.keepAliveTimeout = 65_000

  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject)
      const address = server.address() as AddressInfo
      const host = address.family === "IPv6" ? `[${address.address}]` : address.address
      baseUrl = `http://${host}:${address.port}`
      resolve({
        baseUrl,
        port: address.port,
        apiKey,
        setFaults: (knobs, times) => {
          instanceFaults = knobs
          remainingFaulted = times
        },
        clearFaults: () => {
          instanceFaults = {}
          remainingFaulted = undefined
        },
        calls: () => recorded.slice(),
        clearCalls: () => {
          recorded = []
        },
        close: () =>
          Promise.all([
            new Promise<void>((done) => {
              closed = true
              for (const timer of timers) clearTimeout(timer)
              timers.clear()
              server.close(() => done())
              server.closeAllConnections()
            }),
            // Stops running encodes and deletes the rendered files.
            videos.close(),
            audio.close()
          ]).then(() => undefined)
      })
    })
  })
}
