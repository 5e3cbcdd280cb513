/** The batch aggregate's events (its decider and fold: BatchJob.ts). */
import type { VendorEvent } from "./VendorGroups.ts"

/** How a batch ended. */
export type BatchEnding = "completed" | "failed" | "expired" | "cancelled"

/** How one line ended: answered (any status), refused before an answer, cut by a cancellation, or never run in time. */
export type LineOutcome = "succeeded" | "failed" | "cancelled" | "expired"

/** The caller's key as it was at submit: each line runs with its model list and spend limit. */
export interface BatchKey {
  readonly keyId: string
  readonly models: ReadonlyArray<string> | null
  /** A decimal string, or null without a limit. */
  readonly spendLimit: string | null
}

export interface LineResult {
  readonly line: number
  readonly customId: string
  readonly outcome: LineOutcome
  /** The hold that billed or refunded it; null when no hold was placed (refused before). */
  readonly holdId: string | null
  /** What was captured, a decimal string; "0.000000" for a refunded line. */
  readonly cost: string
  readonly requestId: string
  /** The answer as the client would have had it: its status and body. Null when there was none. */
  readonly response: { readonly statusCode: number; readonly body: unknown } | null
  readonly error: { readonly code: string; readonly message: string } | null
}

export interface BatchSubmitted {
  readonly type: "BatchSubmitted"
  readonly data: {
    readonly batchId: string
    readonly accountId: string
    readonly key: BatchKey
    readonly endpoint: string
    readonly inputFileId: string
    readonly completionWindow: string
    /** The lines' custom ids in file order (line n is `customIds[n]`). */
    readonly customIds: ReadonlyArray<string>
    readonly metadata: Readonly<Record<string, string>> | null
    readonly requestId: string | null
    readonly expiresAt: string
    readonly at: string
    readonly outputExpiresAfterSeconds?: number | null // OpenAI's `output_expires_after.seconds`; absent: the operator's
  }
}

/** An event that only marks a moment of the batch. */
type Marker<T extends string> = { readonly type: T; readonly data: { readonly batchId: string; readonly at: string } }

export type BatchStarted = Marker<"BatchStarted">
export type BatchCancelRequested = Marker<"BatchCancelRequested">
export type BatchFinalizing = Marker<"BatchFinalizing">
/** An ended batch deleted by its account (Anthropic's `DELETE /v1/messages/batches/{id}`): it is no longer shown. */
export type BatchDeleted = Marker<"BatchDeleted">

/** A line's hold was placed (this event is its companion): the line now runs, on this run or a later one. */
export interface BatchLineStarted {
  readonly type: "BatchLineStarted"
  readonly data: { readonly batchId: string; readonly line: number; readonly holdId: string; readonly at: string }
}

export interface BatchLineFinished {
  readonly type: "BatchLineFinished"
  readonly data: LineResult & { readonly batchId: string; readonly at: string }
}

export interface BatchEnded {
  readonly type: "BatchEnded"
  readonly data: {
    readonly batchId: string
    readonly ending: BatchEnding
    readonly outputFileId: string | null
    readonly errorFileId: string | null
    readonly message: string | null
    readonly at: string
  }
}

export type BatchEvent =
  | BatchSubmitted
  | BatchStarted
  | BatchLineStarted
  | BatchLineFinished
  | BatchCancelRequested
  | BatchFinalizing
  | BatchEnded
  | BatchDeleted
  | VendorEvent

export const BATCH_EVENT_TYPES: ReadonlyArray<BatchEvent["type"]> = [
  "BatchSubmitted",
  "BatchStarted",
  "BatchLineStarted",
  "BatchLineFinished",
  "BatchCancelRequested",
  "BatchFinalizing",
  "BatchEnded",
  "BatchDeleted",
  "BatchVendorSubmitting",
  "BatchVendorAccepted"
]

export const isBatchEventType = (type: string): type is BatchEvent["type"] =>
  (BATCH_EVENT_TYPES as ReadonlyArray<string>).includes(type)
