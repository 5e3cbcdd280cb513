/**
 * The plugin spec's `UpstreamHttp` over the gateway's upstream client: what a plugin loaded from the operator config
 * calls its vendor with. Same pools, timeouts, interruption and key redaction as the built-in families. The plugin
 * names an upstream of its model; the request goes to the gateway's own copy of that upstream (its base URL and its
 * key), so a plugin never holds a credential and cannot send one elsewhere. Upstream errors arrive as failure reasons
 * with the gateway's own wording and a stable code: the vendor's body is kept in `detail`, for logs only.
 */
import { Effect } from "effect"
import type { UpstreamClient } from "../adapters/upstream/UpstreamClient.ts"
import type { UpstreamTarget } from "../adapters/upstream/UpstreamEndpoints.ts"
import type { UpstreamError } from "../adapters/upstream/UpstreamError.ts"
import { type PluginFailure, pluginFailure, type UpstreamHttp, type UpstreamHttpRequest } from "./ModelPlugin.ts"
import { failureFromUpstream } from "./text/TextPlugin.ts"

/** The client-facing words and code per reason: never the vendor's text. */
const WORDING: Readonly<Record<PluginFailure["reason"], { readonly message: string; readonly code: string }>> = {
  invalid_request: { message: "the upstream rejected the request", code: "upstream_rejected" },
  rate_limited: { message: "the upstream is rate limiting; retry later", code: "upstream_rate_limited" },
  overloaded: { message: "the upstream is overloaded; retry later", code: "upstream_overloaded" },
  unavailable: { message: "the upstream failed", code: "upstream_unavailable" },
  timeout: { message: "the upstream did not answer in time", code: "upstream_timeout" },
  not_found: { message: "the upstream does not know the object", code: "upstream_not_found" },
  cancelled: { message: "the request was cancelled", code: "cancelled" },
  misconfigured: { message: "the gateway cannot reach this model's upstream", code: "upstream_misconfigured" }
}

/** An upstream error as a plugin receives it: the reason, status and retry hint kept, the wording the gateway's. */
export const pluginFailureFromUpstream = (error: UpstreamError): PluginFailure => {
  const mapped = failureFromUpstream(error)
  return { ...mapped, ...WORDING[mapped.reason] }
}

export const makeUpstreamHttp = (
  client: UpstreamClient["Service"],
  upstreams: ReadonlyMap<string, UpstreamTarget>
): UpstreamHttp => {
  const mapError = <A>(effect: Effect.Effect<A, UpstreamError>): Effect.Effect<A, PluginFailure> =>
    Effect.mapError(effect, pluginFailureFromUpstream)
  return {
    request: (request: UpstreamHttpRequest) => {
      const upstream = upstreams.get(request.upstream.name)
      if (upstream === undefined) {
        return Effect.fail(
          pluginFailure("misconfigured", WORDING.misconfigured.message, {
            code: WORDING.misconfigured.code,
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
