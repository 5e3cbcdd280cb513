/** Why a chat call was refused before or by its upstream. src/http picks the status and envelope. */
import type { PluginFailure } from "@tollgate/plugin-spec"
import { FAILURE_REASONS } from "@tollgate/plugin-spec/shape"
import { Schema } from "effect"

export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", { model: Schema.String }) {}

export class ModelNotAllowed extends Schema.TaggedError<ModelNotAllowed>()("ModelNotAllowed", {
  model: Schema.String
}) {}

/** The request cannot be served as written (malformed, or not expressible for this model's upstream). */
export class InvalidChatRequest extends Schema.TaggedError<InvalidChatRequest>()("InvalidChatRequest", {
  param: Schema.NullOr(Schema.String),
  message: Schema.String
}) {}

/**
 * A plugin call failed or was refused; nothing was charged. `reason` is the plugin spec's failure reason, which
 * src/http maps to a status; `code` is for the client (`moderation_blocked`). `origin` says who refused: the
 * `upstream` (its answer was an error, or it could not be reached) or the `gateway` (a check of the gateway's or the
 * plugin's own, made before any upstream was asked), which then names the request field in `param`.
 */
export class UpstreamFailed extends Schema.TaggedError<UpstreamFailed>()("UpstreamFailed", {
  reason: Schema.Literals(FAILURE_REASONS),
  message: Schema.String,
  code: Schema.optional(Schema.NullOr(Schema.String)),
  retryAfterSeconds: Schema.optional(Schema.Number),
  origin: Schema.optional(Schema.Literals(["gateway", "upstream"])),
  param: Schema.optional(Schema.NullOr(Schema.String))
}) {}

/** Failures about the request itself: when no upstream answered them, the gateway (or its plugin) refused it. */
const REQUEST_REASONS: ReadonlySet<string> = new Set(["invalid_request", "not_found"])

/**
 * The client-facing error for a plugin's failure. A vendor's error answer always carries its status
 * (`upstreamStatus`); a request-shaped failure without one is a refusal made before any upstream was asked.
 */
export const upstreamFailed = (failure: PluginFailure): UpstreamFailed =>
  new UpstreamFailed({
    reason: failure.reason,
    message: failure.message,
    code: failure.code ?? null,
    ...(failure.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: failure.retryAfterSeconds }),
    origin: failure.upstreamStatus === undefined && REQUEST_REASONS.has(failure.reason) ? "gateway" : "upstream",
    param: failure.param ?? null
  })
