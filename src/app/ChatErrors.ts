/** Why a chat call was refused before or by its upstream. src/http picks the status and envelope. */
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

/** The upstream (or a plugin) failed; nothing was charged. */
export class UpstreamFailed extends Schema.TaggedError<UpstreamFailed>()("UpstreamFailed", {
  status: Schema.Number,
  message: Schema.String,
  retryAfterSeconds: Schema.optional(Schema.Number)
}) {}
