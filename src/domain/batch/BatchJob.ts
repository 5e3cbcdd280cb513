/**
 * The batch aggregate: its state is the fold of its own stream `batch-<id>`, and `decide` is the only way a batch
 * changes. A batch holds no money itself: each line runs under a hold of its own in the account's ledger, and the
 * line's result (`BatchLineFinished`) commits in the same transaction as the ledger command that settles or releases
 * that hold (the ledger writer commits a batch event as the "companion" of its command). The hold itself is placed
 * with `BatchLineStarted` as its companion. Because a line starts at most once (so its hold is placed once), a hold
 * resolves exactly once, and a line finishes at most once (rules 1 and 8 below), a line is billed at most once however
 * many workers race for it or however often a worker restarts.
 */
import { parseDecimal } from "../Money.ts"
import type { BatchStatus } from "./BatchStatus.ts"
import { linesAtEnd } from "./ExpiredLines.ts"
import {
  decideVendor,
  evolveVendor,
  type VendorCommand,
  type VendorGroup,
  type VendorRejection
} from "./VendorGroups.ts"

export const batchStream = (batchId: string): string => `batch-${batchId}`

export type { BatchStatus } from "./BatchStatus.ts"

import type { BatchEnding, BatchEvent, BatchKey, LineResult } from "./BatchEvents.ts"

export * from "./BatchEvents.ts"

export interface BatchState {
  readonly batchId: string
  readonly accountId: string
  readonly key: BatchKey
  readonly endpoint: string
  readonly inputFileId: string
  readonly completionWindow: string
  readonly customIds: ReadonlyArray<string>
  readonly metadata: Readonly<Record<string, string>> | null
  readonly requestId: string | null
  /** How long its output and error files are kept (null: the operator's retention). */
  readonly outputExpiresAfterSeconds: number | null
  readonly status: BatchStatus
  /** The hold of every line started (its hold placed), by line number. */
  readonly started: ReadonlyMap<number, string>
  readonly lines: ReadonlyMap<number, LineResult>
  /** Lines sent as vendor batches, by group tag (VendorGroups.ts). */
  readonly vendor: ReadonlyMap<string, VendorGroup>
  readonly succeeded: number
  readonly failed: number
  /** The sum of the lines' captured costs, in micro-dollars. */
  readonly cost: bigint
  readonly outputFileId: string | null
  readonly errorFileId: string | null
  readonly message: string | null
  readonly createdAt: string
  readonly expiresAt: string
  /** When each status was entered (absent: never). */
  readonly times: Readonly<Partial<Record<BatchStatus, string>>>
  readonly updatedAt: string
  /** The stream's version after the last folded event. */
  readonly version: bigint
  /** Deleted after it ended: shown nowhere, moved by nothing. */
  readonly deleted: boolean
}

export const isFinished = (status: BatchStatus): boolean =>
  status === "completed" || status === "failed" || status === "expired" || status === "cancelled"

/** The lines not finished yet, in file order. */
export const pendingLines = (state: BatchState): ReadonlyArray<number> =>
  state.customIds.flatMap((_, line) => (state.lines.has(line) ? [] : [line]))

const micros = (decimal: string): bigint => parseDecimal(decimal) ?? 0n

/** A batch as it is submitted: validating, no line started. */
const submitted = ({ data: d }: Extract<BatchEvent, { readonly type: "BatchSubmitted" }>): BatchState => ({
  batchId: d.batchId,
  accountId: d.accountId,
  key: d.key,
  endpoint: d.endpoint,
  inputFileId: d.inputFileId,
  completionWindow: d.completionWindow,
  customIds: d.customIds,
  metadata: d.metadata,
  requestId: d.requestId,
  outputExpiresAfterSeconds: d.outputExpiresAfterSeconds ?? null,
  status: "validating",
  started: new Map(),
  lines: new Map(),
  vendor: new Map(),
  succeeded: 0,
  failed: 0,
  cost: 0n,
  outputFileId: null,
  errorFileId: null,
  message: null,
  createdAt: d.at,
  expiresAt: d.expiresAt,
  times: { validating: d.at },
  updatedAt: d.at,
  version: 1n,
  deleted: false
})

/** Folds one event. A stream always starts with `BatchSubmitted`; other events before it are ignored. */
export const evolve = (state: BatchState | undefined, event: BatchEvent): BatchState | undefined => {
  if (event.type === "BatchSubmitted") return submitted(event)
  if (state === undefined) return undefined
  const at = event.data.at
  const next = { ...state, version: state.version + 1n, updatedAt: at }
  const enter = (status: BatchStatus) => ({ ...next, status, times: { ...state.times, [status]: at } })
  switch (event.type) {
    case "BatchStarted":
      return enter("in_progress")
    case "BatchLineStarted":
      return { ...next, started: new Map(state.started).set(event.data.line, event.data.holdId) }
    case "BatchLineFinished": {
      const { batchId: _, at: __, ...result } = event.data
      const lines = new Map(state.lines).set(result.line, result)
      const ok = result.outcome === "succeeded"
      return {
        ...next,
        lines,
        succeeded: state.succeeded + (ok ? 1 : 0),
        failed: state.failed + (ok ? 0 : 1),
        cost: state.cost + micros(result.cost)
      }
    }
    case "BatchCancelRequested":
      return enter("cancelling")
    case "BatchFinalizing":
      return enter("finalizing")
    case "BatchDeleted":
      return { ...next, deleted: true }
    case "BatchVendorSubmitting":
    case "BatchVendorAccepted":
      return { ...next, vendor: evolveVendor(state.vendor, event) }
    case "BatchEnded": {
      const { ending, outputFileId, errorFileId, message } = event.data
      return linesAtEnd({ ...enter(ending), outputFileId, errorFileId, message }, ending)
    }
  }
}

export const fold = (events: ReadonlyArray<BatchEvent>): BatchState | undefined =>
  events.reduce<BatchState | undefined>(evolve, undefined)

export type BatchCommand =
  | { readonly type: "Start"; readonly at: string }
  | { readonly type: "StartLine"; readonly line: number; readonly holdId: string; readonly at: string }
  | { readonly type: "FinishLine"; readonly result: LineResult; readonly at: string }
  | { readonly type: "Cancel"; readonly at: string }
  | { readonly type: "Finalize"; readonly at: string }
  | { readonly type: "Delete"; readonly at: string }
  | VendorCommand
  | {
      readonly type: "End"
      readonly ending: BatchEnding
      readonly outputFileId: string | null
      readonly errorFileId: string | null
      readonly message: string | null
      readonly at: string
    }

export type BatchRejection =
  | { readonly _tag: "BatchFinished"; readonly status: BatchStatus }
  | { readonly _tag: "LineFinished"; readonly line: number }
  | { readonly _tag: "LineStarted"; readonly line: number }
  | { readonly _tag: "NoSuchLine"; readonly line: number }
  | { readonly _tag: "WrongStatus"; readonly status: BatchStatus; readonly command: BatchCommand["type"] }
  | { readonly _tag: "LinesPending"; readonly pending: number }
  | { readonly _tag: "NotExpired" }
  | { readonly _tag: "Deleted" }
  | VendorRejection

export type BatchDecision =
  | { readonly _tag: "Accepted"; readonly events: ReadonlyArray<BatchEvent> }
  | { readonly _tag: "Rejected"; readonly rejection: BatchRejection }

const accept = (...events: ReadonlyArray<BatchEvent>): BatchDecision => ({ _tag: "Accepted", events })
const reject = (rejection: BatchRejection): BatchDecision => ({ _tag: "Rejected", rejection })
const wrong = (state: BatchState, command: BatchCommand): BatchDecision =>
  reject({ _tag: "WrongStatus", status: state.status, command: command.type })

type CommandOf<T extends BatchCommand["type"]> = Extract<BatchCommand, { readonly type: T }>

/** A line that exists, has not finished, and has not started yet, of a batch in progress (rule 8). */
const startLine = (state: BatchState, command: CommandOf<"StartLine">): BatchDecision => {
  const { line } = command
  if (!Number.isInteger(line) || line < 0 || line >= state.customIds.length) return reject({ _tag: "NoSuchLine", line })
  if (state.lines.has(line)) return reject({ _tag: "LineFinished", line })
  if (state.started.has(line)) return reject({ _tag: "LineStarted", line })
  if (state.status !== "in_progress") return wrong(state, command)
  return accept({
    type: "BatchLineStarted",
    data: { batchId: state.batchId, line, holdId: command.holdId, at: command.at }
  })
}

/** A line of the file that has not finished, of a batch that runs (rules 1 and 3). */
const finishLine = (state: BatchState, command: CommandOf<"FinishLine">): BatchDecision => {
  const { line } = command.result
  if (!Number.isInteger(line) || line < 0 || line >= state.customIds.length) return reject({ _tag: "NoSuchLine", line })
  if (state.lines.has(line)) return reject({ _tag: "LineFinished", line })
  if (state.status !== "in_progress" && state.status !== "cancelling") return wrong(state, command)
  return accept({
    type: "BatchLineFinished",
    data: { ...command.result, customId: state.customIds[line] as string, batchId: state.batchId, at: command.at }
  })
}

/** Completed only from finalizing (rule 4), cancelled only from cancelling, expired only at its expiry (rule 6). */
const end = (state: BatchState, command: CommandOf<"End">): BatchDecision => {
  const ending = command.ending
  if (ending === "completed" && state.status !== "finalizing") return wrong(state, command)
  if (ending === "cancelled" && state.status !== "cancelling") return wrong(state, command)
  if (ending === "expired" && Date.parse(command.at) < Date.parse(state.expiresAt)) {
    return reject({ _tag: "NotExpired" })
  }
  return accept({
    type: "BatchEnded",
    data: {
      batchId: state.batchId,
      ending,
      outputFileId: command.outputFileId,
      errorFileId: command.errorFileId,
      message: command.message,
      at: command.at
    }
  })
}

/**
 * The batch rules (property-tested in test/domain/batch/BatchJob.test.ts):
 * 1. a line finishes at most once, and only a line of the file;
 * 2. nothing moves a finished batch but its deletion;
 * 3. lines finish only while the batch runs (in progress, or cancelling: lines already running still end);
 * 4. a batch completes only through finalizing, and finalizes only with every line finished;
 * 5. a cancellation is taken only before finalizing; asking again is a no-op;
 * 6. a batch expires only at or after its expiry;
 * 7. its counts are always those of its finished lines;
 * 8. a line starts (its hold is placed) at most once, only while the batch is in progress and before it finished;
 * 9. a batch is deleted only once it has finished, and only once.
 */
export const decide = (state: BatchState, command: BatchCommand): BatchDecision => {
  const batchId = state.batchId
  if (state.deleted) return reject({ _tag: "Deleted" })
  if (command.type === "Delete") {
    if (!isFinished(state.status)) return wrong(state, command)
    return accept({ type: "BatchDeleted", data: { batchId, at: command.at } })
  }
  if (isFinished(state.status)) return reject({ _tag: "BatchFinished", status: state.status })
  const pending = state.customIds.length - state.lines.size
  switch (command.type) {
    case "Start":
      if (state.status !== "validating") return wrong(state, command)
      return accept({ type: "BatchStarted", data: { batchId, at: command.at } })
    case "StartLine":
      return startLine(state, command)
    case "FinishLine":
      return finishLine(state, command)
    case "Cancel":
      if (state.status === "cancelling") return accept()
      if (state.status !== "validating" && state.status !== "in_progress") return wrong(state, command)
      return accept({ type: "BatchCancelRequested", data: { batchId, at: command.at } })
    case "VendorSubmit":
    case "VendorAccept": {
      const decided = decideVendor(state, command)
      if (decided === "wrong-status") return wrong(state, command)
      return "events" in decided ? accept(...decided.events) : reject(decided)
    }
    case "Finalize":
      if (state.status !== "in_progress") return wrong(state, command)
      if (pending > 0) return reject({ _tag: "LinesPending", pending })
      return accept({ type: "BatchFinalizing", data: { batchId, at: command.at } })
    case "End":
      return end(state, command)
  }
}
