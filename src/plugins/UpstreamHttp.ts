/**
 * The plugin spec's `UpstreamHttp` over the gateway's upstream client: what a plugin loaded from the operator config
 * calls its vendor with. Same pools, timeouts, interruption and key redaction as the built-in families. The plugin
 * names an upstream of its model; the request goes to the gateway's own copy of that upstream (its base URL and its
 * key), so a plugin never holds a credential and cannot send one elsewhere. Upstream errors arrive as failure reasons
 * in the gateway's own words (`failureFromUpstream`): the vendor's body is kept in `detail`, for logs only.
 */
import { Effect } from "effect"
import type { UpstreamClient } from "../adapters/upstream/UpstreamClient.ts"
import type { UpstreamTarget } from "../adapters/upstream/UpstreamEndpoints.ts"
import type { UpstreamError } from "../adapters/upstream/UpstreamError.ts"
import { type PluginFailure, pluginFailure, type UpstreamHttp, type UpstreamHttpRequest } from "./ModelPlugin.ts"
import { failureFromUpstream } from "./text/TextPlugin.ts"

export const makeUpstreamHttp = (
  client: UpstreamClient["Service"],
  upstreams: ReadonlyMap<string, UpstreamTarget>
): UpstreamHttp => {
  const mapError = <A>(effect: Effect.Effect<A, UpstreamError>): Effect.Effect<A, PluginFailure> =>
    Effect.mapError(effect, failureFromUpstream)
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
            text: mapError(response.body.text)
          }))
        )
    }
  }
}
