/**
 * The plugin spec's `UpstreamHttp` over the global `fetch`, for running a plugin in its contract suite against a
 * local simulator: the gateway's own implementation adds pooling and its timeouts, with the same failure reasons.
 * Like the gateway, it adds the key itself: `keys` maps an upstream's `name` to its key (plain strings, test keys).
 */
import { Effect } from "effect"
import type { FailureReason, PluginFailure, UpstreamHttp } from "../common.ts"

export interface FetchUpstreamHttpOptions {
  /** The key of each upstream by its `name`, sent as `authorization: Bearer <key>`. */
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

export const fetchUpstreamHttp = (options: FetchUpstreamHttpOptions = {}): UpstreamHttp => ({
  request: (request) => {
    const key = options.keys?.[request.upstream.name]
    const url = `${request.upstream.baseUrl}${request.path}`
    return Effect.tryPromise({
      try: () =>
        fetch(url, {
          method: request.method,
          headers: {
            "content-type": "application/json",
            ...request.headers,
            ...(key === undefined ? {} : { authorization: `Bearer ${key}` })
          },
          ...(request.body === undefined
            ? {}
            : { body: typeof request.body === "string" ? request.body : new Uint8Array(request.body) }),
          signal: request.signal
        }),
      catch: (error) =>
        request.signal.aborted
          ? failure("cancelled", "the request was cancelled")
          : failure("unavailable", `the upstream could not be reached (${request.method} ${url})`, {
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
              })
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
