/** Errors every store-backed service can raise. HTTP maps them (503 / 409) in src/http only. */
import { Schema } from "effect"

/** The database could not be reached or failed mid-transaction; nothing of the command was written. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  message: Schema.String
}) {}

/**
 * The database refused this one command's data (a value it cannot store: a character jsonb refuses, a number past
 * its column's range). Nothing of the command was written; the commands that shared its batch were committed
 * without it. `sqlState` is the Postgres error code; the message never repeats the data.
 */
export class StoreRefused extends Schema.TaggedError<StoreRefused>()("StoreRefused", {
  sqlState: Schema.String
}) {}

/** An append's expected stream version did not match: another writer got there first. */
export class StreamVersionConflict extends Schema.TaggedError<StreamVersionConflict>()("StreamVersionConflict", {
  stream: Schema.String,
  expected: Schema.String
}) {}

/** The same Idempotency-Key was used with a different input. */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  key: Schema.String
}) {}
