/**
 * The body of an upstream response, read once: whole (bytes, text, JSON) as an Effect, or chunk by chunk as raw bytes
 * or parsed server-sent events through an `AsyncIterableIterator`. The iterators are written by hand rather than as
 * async generators so that `return()` tears the socket down at once even while a `next()` is waiting on a silent
 * upstream (an async generator queues `return()` behind the pending `next()`), which is what lets a client disconnect
 * free the upstream connection.
 *
 * This module is an edge around undici's Node `Readable` and `eventsource-parser`: it speaks promises and throws
 * {@link UpstreamError} values from the iterators, as the async-iterator protocol requires.
 */
import { Effect } from "effect"
import { createParser, type EventSourceParser, type ParseError } from "eventsource-parser"
import type { Dispatcher } from "undici"
import { Malformed, UpstreamError, type UpstreamErrorReason } from "./UpstreamError.ts"

/** One server-sent event. `event` is absent for the default `message` type; comments are dropped. */
export interface SseEvent {
  readonly event?: string | undefined
  readonly id?: string | undefined
  readonly data: string
}

export type UndiciBody = Dispatcher.ResponseData["body"]

/** Turns whatever undici threw while the body was read into the reason it stands for. */
export type BodyFailure = (cause: unknown) => UpstreamErrorReason

/** Largest SSE event (or unterminated line) buffered before the stream is called malformed. */
export const DEFAULT_MAX_EVENT_SIZE = 32 * 1024 * 1024

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined }

const ignore = () => undefined

/**
 * Drops a body the caller no longer wants, aborting its request. undici turns a destroy without an error into an
 * `AbortError` emitted as 'error'; with nobody listening that would be an uncaught exception that kills the process.
 */
export const discard = (body: { on(event: "error", listener: () => void): unknown; destroy(): unknown }): void => {
  body.on("error", ignore)
  body.destroy()
}

export class ResponseBody {
  #used = false

  constructor(
    private readonly raw: UndiciBody,
    /** The upstream's name, for errors. */
    private readonly upstream: string,
    private readonly failure: BodyFailure
  ) {}

  /** The whole body. */
  get bytes(): Effect.Effect<Uint8Array, UpstreamError> {
    return this.#consume((body) => body.bytes())
  }

  /** The whole body decoded as UTF-8. */
  get text(): Effect.Effect<string, UpstreamError> {
    return this.#consume((body) => body.text())
  }

  /** The whole body parsed as JSON; invalid JSON fails with reason `Malformed`. */
  get json(): Effect.Effect<unknown, UpstreamError> {
    return Effect.flatMap(this.text, (text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: (cause) =>
          this.#error(
            new Malformed({
              detail: `invalid JSON (${cause instanceof Error ? cause.message.slice(0, 200) : "unparsable"})`
            })
          )
      })
    )
  }

  /** Raw byte chunks as they arrive; `return()` (a `break`, an interrupted consumer) aborts the upstream request. */
  chunks(): AsyncIterableIterator<Uint8Array> {
    this.#claim()
    return new ChunkIterator(this.raw, (cause) => this.#error(this.failure(cause)))
  }

  /**
   * Server-sent events parsed per the spec (`\n`, `\r\n` or `\r` line ends, multi-line `data`, comments skipped). A last
   * event whose lines are complete but which lacks the closing blank line is still delivered; a line cut off by the end
   * of the stream is dropped.
   */
  events(options?: { readonly maxEventSize?: number }): AsyncIterableIterator<SseEvent> {
    this.#claim()
    const chunks = new ChunkIterator(this.raw, (cause) => this.#error(this.failure(cause)))
    return new EventIterator(chunks, options?.maxEventSize ?? DEFAULT_MAX_EVENT_SIZE, (detail) =>
      this.#error(new Malformed({ detail }))
    )
  }

  /** Stops reading and aborts the upstream request if the body has not ended; a no-op once it has. */
  get cancel(): Effect.Effect<void> {
    return Effect.sync(() => this.cancelUnsafe())
  }

  cancelUnsafe(): void {
    if (!this.raw.readableEnded && !this.raw.destroyed) discard(this.raw)
  }

  /**
   * Up to `limit` bytes of the body as text, for error reports; the rest is discarded with the connection. Never fails:
   * a broken error body is reported as far as it was read.
   */
  prefixText(limit: number): Effect.Effect<string> {
    return Effect.callback<string>((resume) => {
      const chunks = this.chunks()
      const decoder = new TextDecoder()
      let text = ""
      let size = 0
      const finish = () => resume(Effect.succeed(text + decoder.decode()))
      const step = (): void => {
        chunks.next().then((result) => {
          if (result.done) return finish()
          text += decoder.decode(result.value, { stream: true })
          size += result.value.byteLength
          if (size < limit) return step()
          void chunks.return?.()
          finish()
        }, finish)
      }
      step()
      return Effect.sync(() => void chunks.return?.())
    })
  }

  #claim(): void {
    if (this.#used) throw new Error("the upstream response body was already read")
    this.#used = true
  }

  #consume<A>(read: (body: UndiciBody) => Promise<A>): Effect.Effect<A, UpstreamError> {
    return Effect.suspend(() => {
      this.#claim()
      return Effect.callback<A, UpstreamError>((resume) => {
        read(this.raw).then(
          (value) => resume(Effect.succeed(value)),
          (cause) => resume(Effect.fail(this.#error(this.failure(cause))))
        )
        return Effect.sync(() => discard(this.raw))
      })
    })
  }

  #error(reason: UpstreamErrorReason): UpstreamError {
    return new UpstreamError({ upstream: this.upstream, reason })
  }
}

type Waiter<A> = {
  readonly resolve: (result: IteratorResult<A>) => void
  readonly reject: (error: UpstreamError) => void
}

/** Pull-based reader over a Node `Readable` in paused mode: each `next()` takes whatever is buffered. */
class ChunkIterator implements AsyncIterableIterator<Uint8Array> {
  #waiter: Waiter<Uint8Array> | undefined
  #error: UpstreamError | undefined
  #finished = false

  constructor(
    private readonly body: UndiciBody,
    private readonly fail: (cause: unknown) => UpstreamError
  ) {
    if (body.destroyed && !body.readableEnded) {
      this.#error = fail(body.errored ?? new DOMException("aborted", "AbortError"))
    }
    body.on("readable", this.#onReadable)
    body.on("end", this.#onEnd)
    body.on("error", this.#onError)
    body.on("close", this.#onClose)
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<Uint8Array>> {
    if (this.#error !== undefined) return Promise.reject(this.#error)
    if (this.#finished) return Promise.resolve(DONE)
    const chunk: Uint8Array | null = this.body.read()
    if (chunk !== null) return Promise.resolve({ done: false, value: chunk })
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject }
    })
  }

  return(): Promise<IteratorResult<Uint8Array>> {
    if (!this.#finished) {
      this.#finished = true
      if (!this.body.readableEnded) discard(this.body)
    }
    this.#settle(DONE)
    return Promise.resolve(DONE)
  }

  #onReadable = (): void => {
    if (this.#waiter === undefined) return
    const chunk: Uint8Array | null = this.body.read()
    if (chunk !== null) this.#settle({ done: false, value: chunk })
  }

  #onEnd = (): void => {
    this.#finished = true
    this.#settle(DONE)
  }

  #onError = (cause: unknown): void => {
    if (this.#finished || this.#error !== undefined) return
    this.#fail(this.fail(cause))
  }

  #onClose = (): void => {
    if (this.#finished || this.#error !== undefined) return
    this.#fail(this.fail(new DOMException("aborted", "AbortError")))
  }

  #fail(error: UpstreamError): void {
    this.#error = error
    const waiter = this.#waiter
    this.#waiter = undefined
    waiter?.reject(error)
  }

  #settle(result: IteratorResult<Uint8Array>): void {
    const waiter = this.#waiter
    this.#waiter = undefined
    waiter?.resolve(result)
  }
}

class EventIterator implements AsyncIterableIterator<SseEvent> {
  readonly #decoder = new TextDecoder()
  readonly #parser: EventSourceParser
  #queue: Array<SseEvent> = []
  #overflow = false
  #lineOpen = false

  constructor(
    private readonly chunks: ChunkIterator,
    maxEventSize: number,
    private readonly malformed: (detail: string) => UpstreamError
  ) {
    this.#parser = createParser({
      maxBufferSize: maxEventSize,
      onEvent: (event) => {
        this.#queue.push(event)
      },
      onError: (error: ParseError) => {
        if (error.type === "max-buffer-size-exceeded") this.#overflow = true
      }
    })
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<SseEvent>> {
    const event = this.#queue.shift()
    if (event !== undefined) return Promise.resolve({ done: false, value: event })
    return this.chunks.next().then(this.#onChunk)
  }

  return(): Promise<IteratorResult<SseEvent>> {
    this.#queue = []
    return this.chunks.return().then(() => DONE)
  }

  #onChunk = (result: IteratorResult<Uint8Array>): IteratorResult<SseEvent> | Promise<IteratorResult<SseEvent>> => {
    if (result.done) {
      // The spec drops an event without its closing blank line; upstreams that end on a complete last line still
      // meant it, so that event is delivered. A line cut off mid-way stays dropped.
      if (!this.#lineOpen) this.#feed(this.#decoder.decode() + "\n")
      const last = this.#queue.shift()
      return last === undefined ? DONE : { done: false, value: last }
    }
    this.#feed(this.#decoder.decode(result.value, { stream: true }))
    const event = this.#queue.shift()
    if (event !== undefined) return { done: false, value: event }
    return this.chunks.next().then(this.#onChunk)
  }

  #feed(text: string): void {
    if (text === "" || this.#overflow) return
    this.#parser.feed(text)
    const last = text.charCodeAt(text.length - 1)
    this.#lineOpen = last !== 10 && last !== 13
    if (this.#overflow) {
      void this.chunks.return()
      // The async-iterator protocol reports failure by rejecting next(), so this throw becomes that rejection.
      throw this.malformed("server-sent event larger than the buffer limit")
    }
  }
}
