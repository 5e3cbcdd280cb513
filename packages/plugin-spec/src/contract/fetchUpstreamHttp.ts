/**
 * The plugin spec's `UpstreamHttp` over the global `fetch`, for running a plugin in its contract suite against a
 * local simulator: the gateway's own implementation adds pooling and its timeouts, with the same failure reasons.
 */
import { Effect, Redacted } from "effect"
import type { FailureReason, PluginFailure, UpstreamHttp } from "../common.ts"

const failure = (reason: FailureReason, message: string, upstreamStatus?: number): PluginFailure => ({
  _tag: "PluginFailure",
  reason,
  message,
  ...(upstreamStatus === undefined ? {} : { upstreamStatus })
})

const reasonOf = (status: number): FailureReason =>
  status === 429 ? "rate_limited" : status === 503 || status === 529 ? "overloaded" : status >= 500 ? "unavailable" : status === 404 ? "not_found" : status === 401 || status === 403 ? "unavailable" : "invalid_request"

export const fetchUpstreamHttp = (): UpstreamHttp => ({
  request: (request) =>
    Effect.tryPromise({
      try: () =>
        fetch(`${request.upstream.baseUrl}${request.path}`, {
          method: request.method,
          headers: {
            "content-type": "application/json",
            ...request.headers,
            authorization: `Bearer ${Redacted.value(request.upstream.apiKey)}`
          },
          ...(request.body === undefined ? {} : { body: request.body as BodyInit }),
          signal: request.signal
        }),
      catch: () =>
        request.signal.aborted
          ? failure("cancelled", "the request was cancelled")
          : failure("unavailable", "the upstream could not be reached")
    }).pipe(
      Effect.flatMap((response) =>
        response.ok
          ? Effect.succeed({
              status: response.status,
              headers: Object.fromEntries(response.headers),
              json: Effect.tryPromise({
                try: () => response.clone().json() as Promise<unknown>,
                catch: () => failure("unavailable", "the upstream sent a malformed response")
              }),
              text: Effect.tryPromise({
                try: () => response.clone().text(),
                catch: () => failure("unavailable", "the upstream's response was cut")
              })
            })
          : Effect.fail(failure(reasonOf(response.status), `the upstream answered HTTP ${response.status}`, response.status))
      )
    )
})
