/**
 * Where generated media is kept between its creation and its expiry. The file-system implementation lives in
 * src/adapters/content; an S3-compatible backend implements the same four operations (and may answer `locate`
 * with a signed URL the HTTP layer redirects to).
 */
import { Context, type Effect, Schema, type Stream } from "effect"

export class ContentStoreError extends Schema.TaggedError<ContentStoreError>()("ContentStoreError", {
  message: Schema.String
}) {}

export class ContentTooLarge extends Schema.TaggedError<ContentTooLarge>()("ContentTooLarge", {
  limit: Schema.Number
}) {}

export interface StoredContent {
  readonly size: number
}

/** An inclusive byte range, as HTTP `Range` names it. */
export interface ByteRange {
  readonly start: number
  readonly end: number
}

export class ContentStore extends Context.Service<
  ContentStore,
  {
    /** Stores the whole body under `key` (replacing nothing: a partial write is never visible under the key). */
    readonly put: (
      key: string,
      body: AsyncIterable<Uint8Array>,
      maxBytes: number
    ) => Effect.Effect<StoredContent, ContentStoreError | ContentTooLarge>
    /** Size of the stored object, or undefined when there is none. */
    readonly stat: (key: string) => Effect.Effect<StoredContent | undefined, ContentStoreError>
    /** The object's bytes (or a range of them), streamed. */
    readonly read: (key: string, range?: ByteRange) => Stream.Stream<Uint8Array, ContentStoreError>
    /** Up to `limit` leading bytes, for header parsing. */
    readonly head: (key: string, limit: number) => Effect.Effect<Uint8Array, ContentStoreError>
    /** Deletes the object; deleting a missing object is not an error. */
    readonly remove: (key: string) => Effect.Effect<void, ContentStoreError>
  }
>()("tollgate/app/ContentStore") {}
