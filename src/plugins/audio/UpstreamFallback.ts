/**
 * The upstream loop the embeddings, transcription and speech families share: a model's upstreams of the right
 * protocol are tried in configured order, moving on only when the same request might succeed elsewhere (a refused
 * key, a retryable status, an unreachable host). A `PluginFailure` from an attempt (the request itself is wrong) ends
 * the loop at once.
 */
import { Effect, Result } from "effect"
import type { UpstreamError } from "../../adapters/upstream/UpstreamError.ts"
import type { UpstreamConfig, UpstreamProtocol } from "../ModelPlugin.ts"
import { type PluginFailure, type PluginModel, pluginFailure } from "../ModelPlugin.ts"
import { failureFromUpstream } from "../text/TextPlugin.ts"

/** A failure worth trying the next upstream for. */
export const worthAnotherUpstream = (error: UpstreamError): boolean => {
  const reason = error.reason
  if (reason._tag === "HttpStatus") return reason.status === 401 || reason.status === 403 || reason.isRetryable
  return reason._tag === "ConnectFailed" || reason._tag === "Timeout" || reason._tag === "ConnectionLost"
}

const isPluginFailure = (error: UpstreamError | PluginFailure): error is PluginFailure => error._tag === "PluginFailure"

/** The model's upstreams that speak one of `protocols`, in configured order. */
export const upstreamsFor = (
  model: PluginModel,
  protocols: ReadonlyArray<UpstreamProtocol>
): ReadonlyArray<UpstreamConfig> => model.upstreams.filter((upstream) => protocols.includes(upstream.protocol))

/** The first upstream's answer; `upstreams` must already be those the family can call. */
export const withFallback = <A>(
  model: PluginModel,
  upstreams: ReadonlyArray<UpstreamConfig>,
  family: string,
  attempt: (upstream: UpstreamConfig) => Effect.Effect<A, UpstreamError | PluginFailure>
): Effect.Effect<A, PluginFailure> =>
  Effect.gen(function* () {
    if (upstreams.length === 0) {
      return yield* Effect.fail(
        pluginFailure("misconfigured", `model ${model.id} has no upstream its ${family} plugin can call`)
      )
    }
    let last: PluginFailure = pluginFailure("unavailable", "no upstream answered")
    for (const upstream of upstreams) {
      const outcome = yield* Effect.result(attempt(upstream))
      if (Result.isSuccess(outcome)) return outcome.success
      const error = outcome.failure
      if (isPluginFailure(error)) return yield* Effect.fail(error)
      last = failureFromUpstream(error)
      if (!worthAnotherUpstream(error)) break
      yield* Effect.logWarning(`${family} upstream failed, trying the next one`).pipe(
        Effect.annotateLogs({ upstream: upstream.name, model: model.id, reason: last.reason })
      )
    }
    return yield* Effect.fail(last)
  })
