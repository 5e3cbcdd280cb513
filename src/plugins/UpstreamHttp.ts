/**
 * The plugin spec's `UpstreamHttp` over the gateway's upstream client: what a plugin loaded from the operator config
 * calls its vendor with. Same pools, timeouts, interruption and key redaction as the built-in families. The plugin
 * names an upstream of its model; the request goes to the gateway's own copy of that upstream (its base URL and its
 * key), so a plugin never holds a credential and cannot send one elsewhere. Upstream errors arrive as failure reasons
 * in the gateway's own words (`failureFromUpstream`), a refusal of the request included (`forPlugin`): the vendor's
 * body is kept in `detail`, for logs only.
 */
import { Effect } from "effect"
import type { UpstreamClient } from "../adapters/upstream/UpstreamClient.ts"
import type { UpstreamTarget } from "../adapters/upstream/UpstreamEndpoints.ts"
import { UpstreamError } from "../adapters/upstream/UpstreamError.ts"
import {
  type PluginFailure,
  pluginFailure,
  type SseFrame,
  type UpstreamHttp,
  type UpstreamHttpRequest
} from "./ModelPlugin.ts"
import { failureFromUpstream } from "./UpstreamFailure.ts"

/**
 * An upstream error as a plugin from the operator config reads it. The built-in families keep the vendor's message of
 * a refused request (what a client of the vendor's own protocol must fix); a plugin's vendor speaks a protocol the
 * client never sent, so even that stays in `detail` and the client reads the status alone.
 */
const forPlugin = (error: UpstreamError): PluginFailure => {
  const failure = failureFromUpstream(error)
  return failure.reason === "invalid_request" && failure.upstreamStatus !== undefined
    ? { ...failure, message: `the upstream rejected the request (HTTP ${failure.upstreamStatus})` }
    : failure
}

/** Why a streamed read failed, as a plugin reads it: a PluginFailure, never the gateway's error class. */
const streamFailure = (error: unknown): PluginFailure =>
  error instanceof UpstreamError
    ? forPlugin(error)
    : pluginFailure("unavailable", "the upstream's response was cut", { detail: String(error) })

/**
 * An async iterator whose failed reads reject with a PluginFailure. The edge to the body's async iterator: a promise
 * rejection is mapped, not caught.
 */
const readAsPlugin = <A, B>(source: AsyncIterableIterator<A>, map: (value: A) => B): AsyncIterableIterator<B> => {
  const iterator: AsyncIterableIterator<B> = {
    next: () =>
      source.next().then(
        (result) =>
          result.done === true ? { done: true, value: undefined } : { done: false, value: map(result.value) },
        (error: unknown) => Promise.reject(streamFailure(error))
      ),
    return: () =>
      (source.return?.() ?? Promise.resolve({ done: true, value: undefined })).then(() => ({
        done: true,
        value: undefined
      })),
    [Symbol.asyncIterator]: () => iterator
  }
  return iterator
}

export const makeUpstreamHttp = (
  client: UpstreamClient["Service"],
  upstreams: ReadonlyMap<string, UpstreamTarget>
): UpstreamHttp => {
  const mapError = <A>(effect: Effect.Effect<A, UpstreamError>): Effect.Effect<A, PluginFailure> =>
    Effect.mapError(effect, forPlugin)
  return {
    request: (request: UpstreamHttpRequest) => {
      const upstream = upstreams.get(request.upstream.name)
      if (upstream === undefined) {
        return Effect.fail(
          pluginFailure("misconfigured", "the gateway cannot reach this model's upstream", {
            detail: `the plugin asked for upstream '${request.upstream.name}', which the operator config does not declare`
          })
        )
      }
      return client
        .request({
          upstream,
          method: request.method,
          path: request.path,
          ...(request.headers === undefined ? {} : { headers: request.headers }),
          ...(request.body === undefined ? {} : { body: request.body }),
          signal: request.signal
        })
        .pipe(
          mapError,
          Effect.map((response) => ({
            status: response.status,
            headers: response.headers,
            json: mapError(response.body.json),
            text: mapError(response.body.text),
            chunks: () => readAsPlugin(response.body.chunks(), (chunk) => chunk),
            events: () =>
              readAsPlugin(
                response.body.events(),
                (event): SseFrame =>
                  event.event === undefined ? { data: event.data } : { event: event.event, data: event.data }
              )
          }))
        )
    }
  }
}
