/** Why a stored response could not be read or cancelled. src/http picks the status and envelope. */
import { Schema } from "effect"

/** No such response for this account (another account's, expired, or deleted, all alike). */
export class ResponseNotFound extends Schema.TaggedError<ResponseNotFound>()("ResponseNotFound", {
  id: Schema.String
}) {}

/** Only a background response still running can be cancelled. */
export class ResponseNotCancellable extends Schema.TaggedError<ResponseNotCancellable>()("ResponseNotCancellable", {
  id: Schema.String,
  message: Schema.String
}) {}

/** No such conversation for this account (another account's, or deleted, all alike). */
export class ConversationNotFound extends Schema.TaggedError<ConversationNotFound>()("ConversationNotFound", {
  id: Schema.String
}) {}

/** No such item in the account's conversation. */
export class ConversationItemNotFound extends Schema.TaggedError<ConversationItemNotFound>()(
  "ConversationItemNotFound",
  { id: Schema.String, itemId: Schema.String }
) {}
