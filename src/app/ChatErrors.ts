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
 * The upstream (or a plugin) refused or failed; nothing was charged. `reason` is the plugin spec's failure reason, which
 * src/http maps to a status; `code` is for the client (`moderation_blocked`).
 */
export class UpstreamFailed extends Schema.TaggedError<UpstreamFailed>()("UpstreamFailed", {
  reason: Schema.Literals(FAILURE_REASONS),
  message: Schema.String,
  code: Schema.optional(Schema.NullOr(Schema.String)),
  retryAfterSeconds: Schema.optional(Schema.Number)
}) {}

/** The client-facing error for a plugin's failure. */
export const upstreamFailed = (failure: PluginFailure): UpstreamFailed =>
  new UpstreamFailed({
    reason: failure.reason,
    message: failure.message,
    code: failure.code ?? null,
    ...(failure.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: failure.retryAfterSeconds })
  })
