/**
 * A vendor's own batch API, as the batch worker uses it (app/batch/VendorLines.ts): OpenAI's Files and Batch APIs and
 * Anthropic's Message Batches, for upstreams the operator marked `batch: true`. The implementation
 * (plugins/text/VendorBatchClient.ts) converts each line as an interactive call to that upstream is converted (a chat
 * call as the text plugin builds it, an embeddings call as the embeddings plugin does) and reads the vendor's results
 * back as that call's replies; the worker turns them into the client's lines.
 */
import type { ChatCall, Dialect, EmbeddingsCall } from "@tollgate/plugin-spec"
import { Context, type Effect, Schema } from "effect"
import type { UpstreamConfig } from "../OperatorConfig.ts"

export type { UpstreamConfig }

/**
 * The vendor could not be asked (down, overloaded, our key refused, unreadable): the worker tries again at its next
 * poll; or (`refused`) it answered that it will not take the request (another 4xx), which asking again would not change.
 */
export class VendorBatchFailed extends Schema.TaggedError<VendorBatchFailed>()("VendorBatchFailed", {
  message: Schema.String,
  refused: Schema.Boolean
}) {}

/** The interactive call a vendor line stands for. Embeddings calls go only to OpenAI's batch API (VendorTargets.ts). */
export type VendorCall =
  | { readonly _tag: "Chat"; readonly call: ChatCall }
  | { readonly _tag: "Embeddings"; readonly call: EmbeddingsCall }

/** One line for the vendor: its custom id there, and the interactive call it stands for. */
export interface VendorLine {
  readonly customId: string
  readonly call: VendorCall
}

/** A line's answer from the vendor, as its interactive call would have had it. */
export type VendorReply =
  /** A chat reply body in `dialect`, as the interactive endpoint would have answered. */
  | { readonly _tag: "Chat"; readonly dialect: Dialect; readonly body: unknown }
  /** Embeddings, in input order (as the vendor indexed them), and the input tokens it reported (undefined: none). */
  | {
      readonly _tag: "Embeddings"
      readonly vectors: ReadonlyArray<ReadonlyArray<number>>
      readonly promptTokens: number | undefined
    }

/** One line's result at the vendor. */
export type VendorLineResult =
  | { readonly _tag: "Succeeded"; readonly reply: VendorReply }
  | { readonly _tag: "Errored"; readonly status: number; readonly message: string }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Cancelled" }

export type VendorPoll =
  | { readonly _tag: "Pending" }
  /** `missing`: what a line the vendor has no result for is (its batch expired, was cancelled or failed). */
  | {
      readonly _tag: "Ended"
      readonly results: ReadonlyMap<string, VendorLineResult>
      readonly missing: VendorLineResult
    }

export class VendorBatches extends Context.Service<
  VendorBatches,
  {
    /** Why a line cannot be sent (its conversion failed), or undefined. Pure. */
    readonly refusal: (line: VendorLine, upstream: UpstreamConfig) => string | undefined
    /** Submits the lines as one vendor batch carrying `tag`; answers the vendor's batch id. */
    readonly submit: (
      upstream: UpstreamConfig,
      tag: string,
      lines: ReadonlyArray<VendorLine>
    ) => Effect.Effect<string, VendorBatchFailed>
    /** The id of a vendor batch carrying `tag` submitted at or after `since`, if the vendor has one. */
    readonly find: (
      upstream: UpstreamConfig,
      tag: string,
      lines: number,
      since: Date
    ) => Effect.Effect<string | undefined, VendorBatchFailed>
    readonly poll: (upstream: UpstreamConfig, vendorBatchId: string) => Effect.Effect<VendorPoll, VendorBatchFailed>
    readonly cancel: (upstream: UpstreamConfig, vendorBatchId: string) => Effect.Effect<void, VendorBatchFailed>
  }
>()("tollgate/app/ports/VendorBatches") {}
