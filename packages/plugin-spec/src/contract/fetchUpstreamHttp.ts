/**
 * The plugin spec's `UpstreamHttp` over the global `fetch`, for running a plugin in its contract suite against a
 * local simulator: the gateway's own implementation adds pooling and its timeouts, with the same failure reasons.
 * Like the gateway, it adds the key itself: `keys` maps an upstream's `name` to its key (plain strings, test keys), sent
 * as the upstream's `auth` says (a bearer token, a named header or a query parameter; by default as the gateway sends a
 * built-in protocol's: Anthropic's `x-api-key`, Gemini's `x-goog-api-key`, a bearer token otherwise).
 */
import { Effect } from "effect"
import type { FailureReason, PluginFailure, SseFrame, UpstreamAuth, UpstreamConfig, UpstreamHttp } from "../common.ts"

export interface FetchUpstreamHttpOptions {
  /** The key of each upstream by its `name`, sent as the upstream's `auth` says. */
  readonly keys?: Readonly<Record<string, string>> | undefined
}

const failure = (
  reason: FailureReason,
  message: string,
  extra: { readonly upstreamStatus?: number; readonly detail?: string } = {}
): PluginFailure => ({ _tag: "PluginFailure", reason, message, ...extra })

const reasonOf = (status: number): FailureReason =>
  status === 429
    ? "rate_limited"
    : status === 503 || status === 529
      ? "overloaded"
      : status >= 500 || status === 401 || status === 403
        ? "unavailable"
        : status === 404
          ? "not_found"
          : "invalid_request"

/** What went wrong, with its causes (`fetch failed` says nothing; its cause says `ECONNREFUSED 127.0.0.1:9`). */
const describeError = (error: unknown): string => {
  const parts: Array<string> = []
  let current: unknown = error
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    parts.push(current instanceof Error ? `${current.name}: ${current.message}` : String(current))
    current = current instanceof Error ? (current as { readonly cause?: unknown }).cause : undefined
  }
  return parts.join(" ← ")
}

/** The body's bytes as they arrive; a failed read rejects with a PluginFailure, `return()` cancels the body. */
const chunksOf = (response: Response): AsyncIterableIterator<Uint8Array> => {
  const reader = response.body === null ? undefined : response.body.getReader()
  const iterator: AsyncIterableIterator<Uint8Array> = {
    next: () =>
      reader === undefined
        ? Promise.resolve({ done: true, value: undefined })
        : reader.read().then(
            (read) => (read.done ? { done: true, value: undefined } : { done: false, value: read.value }),
            (error: unknown) =>
              Promise.reject(failure("unavailable", "the upstream's response was cut", { detail: describeError(error) }))
          ),
    return: () => (reader === undefined ? Promise.resolve() : reader.cancel()).then(() => ({ done: true, value: undefined })),
    [Symbol.asyncIterator]: () => iterator
  }
  return iterator
}

/** Server-sent events from a byte stream (`data:` lines joined, `event:` kept, comments skipped). */
async function* eventsOf(chunks: AsyncIterableIterator<Uint8Array>): AsyncIterableIterator<SseFrame> {
  const decoder = new TextDecoder()
  let buffer = ""
  let event: string | undefined
  let data: Array<string> = []
  const line = (text: string): SseFrame | undefined => {
    if (text === "") {
      const frame = data.length === 0 ? undefined : { ...(event === undefined ? {} : { event }), data: data.join("\n") }
      event = undefined
      data = []
      return frame
    }
    if (text.startsWith(":")) return undefined
    const colon = text.indexOf(":")
    const field = colon === -1 ? text : text.slice(0, colon)
    const value = colon === -1 ? "" : text.slice(colon + 1).replace(/^ /, "")
    if (field === "data") data.push(value)
    else if (field === "event") event = value
    return undefined
  }
  for await (const chunk of chunks) {
    buffer += decoder.decode(chunk, { stream: true })
    const lines = buffer.split(/\r\n|\r|\n/)
    buffer = lines.pop() ?? ""
    for (const text of lines) {
      const frame = line(text)
      if (frame !== undefined) yield frame
    }
  }
  const last = line(buffer) ?? line("")
  if (last !== undefined) yield last
}

const authOf = (upstream: UpstreamConfig): UpstreamAuth =>
  upstream.auth ??
  (upstream.protocol === "anthropic"
    ? { scheme: "header", name: "x-api-key" }
    : upstream.protocol === "gemini"
      ? { scheme: "header", name: "x-goog-api-key" }
      : { scheme: "bearer" })

/** The URL and the headers that carry `key` (none without one). */
const authenticated = (
  upstream: UpstreamConfig,
  path: string,
  key: string | undefined
): { readonly url: string; readonly headers: Readonly<Record<string, string>> } => {
  const url = `${upstream.baseUrl}${path}`
  if (key === undefined) return { url, headers: {} }
  const auth = authOf(upstream)
  switch (auth.scheme) {
    case "bearer":
      return { url, headers: { authorization: `Bearer ${key}` } }
    case "header":
      return { url, headers: { [auth.name.toLowerCase()]: key } }
    case "query":
      return { url: `${url}${url.includes("?") ? "&" : "?"}${encodeURIComponent(auth.name)}=${encodeURIComponent(key)}`, headers: {} }
  }
}

export const fetchUpstreamHttp = (options: FetchUpstreamHttpOptions = {}): UpstreamHttp => ({
  request: (request) => {
    const key = options.keys?.[request.upstream.name]
    const { url, headers: authHeaders } = authenticated(request.upstream, request.path, key)
    // The key is in the URL for a query scheme: never in what a failure says.
    const shown = `${request.upstream.baseUrl}${request.path}`
    return Effect.tryPromise({
      try: () =>
        fetch(url, {
          method: request.method,
          headers: {
            "content-type": "application/json",
            ...request.headers,
            ...authHeaders
          },
          ...(request.body === undefined
            ? {}
            : { body: typeof request.body === "string" ? request.body : new Uint8Array(request.body) }),
          signal: request.signal
        }),
      catch: (error) =>
        request.signal.aborted
          ? failure("cancelled", "the request was cancelled")
          : failure("unavailable", `the upstream could not be reached (${request.method} ${shown})`, {
              detail: describeError(error)
            })
    }).pipe(
      Effect.flatMap((response) =>
        response.ok
          ? Effect.succeed({
              status: response.status,
              headers: Object.fromEntries(response.headers),
              json: Effect.tryPromise({
                try: () => response.clone().json() as Promise<unknown>,
                catch: (error) =>
                  failure("unavailable", "the upstream sent a malformed response", { detail: describeError(error) })
              }),
              text: Effect.tryPromise({
                try: () => response.clone().text(),
                catch: (error) =>
                  failure("unavailable", "the upstream's response was cut", { detail: describeError(error) })
              }),
              chunks: () => chunksOf(response),
              events: () => eventsOf(chunksOf(response))
            })
          : Effect.flatMap(
              Effect.promise(() => response.text().catch(() => "")),
              (body) =>
                Effect.fail(
                  failure(reasonOf(response.status), `the upstream answered HTTP ${response.status}`, {
                    upstreamStatus: response.status,
                    detail: body.slice(0, 2_000)
                  })
                )
            )
      )
    )
  }
})
