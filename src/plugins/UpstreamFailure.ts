/**
 * What an upstream's failure means to a client, and the one attempt every routed family makes (text, chat-style and
 * dedicated images, embeddings, transcription, speech). Routing (app/routing/Deployments.ts) hands the plugin the
 * model narrowed to the deployment it chose, so a plugin calls that one upstream once and says what its failure means;
 * whether another deployment is worth an attempt is decided there, once, from that failure (AttemptRules.ts `judge`).
 * Video is not routed and keeps its own loop (VideoPlugin.ts): a timeout after a task was sent is ambiguous there
 * (the task may exist), so it is not sent elsewhere.
 */
import { Effect } from "effect"
import { asRecord, isRecord, parseJson } from "./text/convert/json.ts"
import type { UpstreamError } from "../adapters/upstream/UpstreamError.ts"
import type { UpstreamConfig, UpstreamProtocol } from "./ModelPlugin.ts"
import { type PluginFailure, type PluginModel, pluginFailure, refusedCredentials } from "./ModelPlugin.ts"

/** The vendor's error message, if its body is one of the three envelopes; never the whole body. */
export const vendorMessage = (body: string): string | undefined => {
  // Not JSON or no message: say nothing rather than echo an arbitrary body.
  const parsed = asRecord(parseJson(body))
  const error = parsed.error
  if (isRecord(error) && typeof error.message === "string") return error.message
  if (typeof error === "string") return error
  return typeof parsed.message === "string" ? parsed.message : undefined
}

/**
 * What the client sees when an upstream fails: a reason and the gateway's own words. The vendor's body goes to
 * `detail`, for logs only: its text about its own failures (a 5xx, a rate limit, an overload, a refused key) may name
 * its internals and is never the client's to act on. The one exception is a refusal of the request itself (another
 * 4xx): the vendor's message (`budget_tokens must be less than max_tokens`) is what the client must fix, so it is kept,
 * read from the vendor's error envelope (never the raw body).
 */
export const failureFromUpstream = (error: UpstreamError): PluginFailure => {
  const reason = error.reason
  switch (reason._tag) {
    case "HttpStatus": {
      // The status goes with every failure: routing reads it (refused credentials disable the upstream).
      const seen = { detail: reason.body, upstreamStatus: reason.status }
      const retryAfter = reason.retryAfter === undefined ? {} : { retryAfterSeconds: reason.retryAfter }
      if (refusedCredentials(reason.status, reason.body)) {
        return pluginFailure(
          "unavailable",
          "the upstream refused the gateway's credentials; the operator must check its key",
          seen
        )
      }
      if (reason.status === 429) {
        return pluginFailure("rate_limited", "the upstream is rate limiting; retry later", {
          ...retryAfter,
          ...seen
        })
      }
      // Overload is worth saying as such: Anthropic clients see `overloaded_error`, OpenAI ones `service_unavailable_error`.
      if (reason.status === 503 || reason.status === 529) {
        return pluginFailure("overloaded", "the upstream is overloaded; retry later", {
          ...retryAfter,
          ...seen
        })
      }
      if (reason.status >= 400 && reason.status < 500) {
        const message = vendorMessage(reason.body)
        return pluginFailure(
          "invalid_request",
          `the upstream rejected the request: ${message ?? `HTTP ${reason.status}`}`,
          seen
        )
      }
      return pluginFailure("unavailable", `the upstream failed (HTTP ${reason.status})`, seen)
    }
    case "Timeout":
      return pluginFailure("timeout", `the upstream did not answer in time (${reason.phase} timeout)`)
    case "ConnectFailed":
    case "ConnectionLost":
      return pluginFailure("unavailable", "the upstream could not be reached")
    case "Malformed":
      return pluginFailure("unavailable", "the upstream sent a malformed response")
    case "Aborted":
      return pluginFailure("cancelled", "the request was cancelled")
  }
}

const isPluginFailure = (error: UpstreamError | PluginFailure): error is PluginFailure => error._tag === "PluginFailure"

/** The model's upstreams that speak one of `protocols`, in configured order. */
export const upstreamsFor = (
  model: PluginModel,
  protocols: ReadonlyArray<UpstreamProtocol>
): ReadonlyArray<UpstreamConfig> => model.upstreams.filter((upstream) => protocols.includes(upstream.protocol))

/**
 * One attempt on the upstream routing chose: the first of `upstreams` (those of the model the family can call; a
 * routed model holds one), its failure as the client is to see it. None: the model is misconfigured for the family.
 */
export const onUpstream = <A, U extends UpstreamConfig = UpstreamConfig>(
  model: PluginModel,
  upstreams: ReadonlyArray<U>,
  family: string,
  attempt: (upstream: U) => Effect.Effect<A, UpstreamError | PluginFailure>
): Effect.Effect<A, PluginFailure> => {
  const upstream = upstreams[0]
  if (upstream === undefined) {
    return Effect.fail(
      pluginFailure("misconfigured", `model ${model.id} has no upstream its ${family} plugin can call`)
    )
  }
  return Effect.mapError(attempt(upstream), (error) => (isPluginFailure(error) ? error : failureFromUpstream(error)))
}
