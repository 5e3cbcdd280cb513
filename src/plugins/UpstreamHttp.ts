/**
 * The plugin spec's `UpstreamHttp` over the gateway's upstream client: what a plugin of a new kind calls its vendor
 * with. Same pools, timeouts, interruption and key redaction as the built-in families; upstream errors arrive already
 * mapped to failure reasons, the way the text family maps them.
 */
import { Effect } from "effect"
import type { UpstreamClient } from "../adapters/upstream/UpstreamClient.ts"
import type { UpstreamError } from "../adapters/upstream/UpstreamError.ts"
import type { PluginFailure, UpstreamHttp, UpstreamHttpRequest } from "./ModelPlugin.ts"
import { failureFromUpstream } from "./text/TextPlugin.ts"

export const makeUpstreamHttp = (client: UpstreamClient["Service"]): UpstreamHttp => {
  const mapError = <A>(effect: Effect.Effect<A, UpstreamError>): Effect.Effect<A, PluginFailure> =>
    Effect.mapError(effect, failureFromUpstream)
  return {
    request: (request: UpstreamHttpRequest) =>
      client
        .request({
          upstream: request.upstream,
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
            text: mapError(response.body.text)
          }))
        )
  }
}
