/** What the batch and file calls fail with, besides the store's errors; `src/http` picks the status. */
import { Schema } from "effect"

export class FileNotFound extends Schema.TaggedError<FileNotFound>()("FileNotFound", {
  fileId: Schema.String
}) {}

export class BatchNotFound extends Schema.TaggedError<BatchNotFound>()("BatchNotFound", {
  batchId: Schema.String
}) {}

/** A batch refused at submit: its file, or one of its lines (1-based `line`, and the field in `param`). */
export class BatchInvalid extends Schema.TaggedError<BatchInvalid>()("BatchInvalid", {
  message: Schema.String,
  param: Schema.NullOr(Schema.String),
  line: Schema.NullOr(Schema.Number),
  code: Schema.String
}) {}

/** A cancellation asked of a batch already finalizing or finished. */
export class BatchNotCancellable extends Schema.TaggedError<BatchNotCancellable>()("BatchNotCancellable", {
  batchId: Schema.String,
  status: Schema.String
}) {}

/** A deletion asked of a batch that has not ended (Anthropic: cancel it first). */
export class BatchNotDeletable extends Schema.TaggedError<BatchNotDeletable>()("BatchNotDeletable", {
  batchId: Schema.String,
  status: Schema.String
}) {}
