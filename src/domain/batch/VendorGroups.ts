/**
 * A batch's vendor groups: lines sent together as one vendor batch to an upstream the operator marked `batch: true`
 * (app/batch/VendorLines.ts). A group is recorded (`BatchVendorSubmitting`, after its lines' holds are placed) before
 * the vendor is asked, with a tag the submission carries; the vendor's batch id is recorded (`BatchVendorAccepted`)
 * before it is polled. A run that stops between the two looks for its tag at the vendor before submitting again.
 * A group's lines finish as the other lines do (`BatchLineFinished`, with their hold's settlement or release).
 */
import type { BatchState } from "./BatchJob.ts"

export interface VendorGroup {
  /** Unique in the batch; the vendor batch carries it (OpenAI: metadata; Anthropic: see VendorLines.ts). */
  readonly tag: string
  /** The upstream's name under `upstreams:`. */
  readonly upstream: string
  readonly lines: ReadonlyArray<number>
  readonly submittingAt: string
  /** Null until the vendor accepted the group's batch and its id was recorded. */
  readonly vendorBatchId: string | null
}

export interface BatchVendorSubmitting {
  readonly type: "BatchVendorSubmitting"
  readonly data: {
    readonly batchId: string
    readonly tag: string
    readonly upstream: string
    readonly lines: ReadonlyArray<number>
    readonly at: string
  }
}

export interface BatchVendorAccepted {
  readonly type: "BatchVendorAccepted"
  readonly data: { readonly batchId: string; readonly tag: string; readonly vendorBatchId: string; readonly at: string }
}

export type VendorEvent = BatchVendorSubmitting | BatchVendorAccepted

export type VendorCommand =
  | {
      readonly type: "VendorSubmit"
      readonly tag: string
      readonly upstream: string
      readonly lines: ReadonlyArray<number>
      readonly at: string
    }
  | { readonly type: "VendorAccept"; readonly tag: string; readonly vendorBatchId: string; readonly at: string }

export type VendorRejection =
  | { readonly _tag: "GroupExists"; readonly tag: string }
  | { readonly _tag: "NoSuchGroup"; readonly tag: string }
  | { readonly _tag: "LineNotHeld"; readonly line: number }

/** Every line some vendor group holds. */
export const vendorLines = (state: Pick<BatchState, "vendor">): ReadonlySet<number> =>
  new Set([...state.vendor.values()].flatMap((group) => group.lines))

/** Groups with a line still unfinished. */
export const openGroups = (state: Pick<BatchState, "vendor" | "lines">): ReadonlyArray<VendorGroup> =>
  [...state.vendor.values()].filter((group) => group.lines.some((line) => !state.lines.has(line)))

export const evolveVendor = (
  vendor: ReadonlyMap<string, VendorGroup>,
  event: VendorEvent
): ReadonlyMap<string, VendorGroup> => {
  if (event.type === "BatchVendorSubmitting") {
    const { tag, upstream, lines, at } = event.data
    return new Map(vendor).set(tag, { tag, upstream, lines, submittingAt: at, vendorBatchId: null })
  }
  const { tag, vendorBatchId } = event.data
  const group = vendor.get(tag)
  return group === undefined ? vendor : new Map(vendor).set(tag, { ...group, vendorBatchId })
}

/**
 * The rules (with BatchJob.ts's, which call this only while the batch is in progress or cancelling):
 * a group is recorded once, only of lines started (held), unfinished and in no other group, and only in progress;
 * its vendor id is recorded once (the same id again is a no-op).
 */
export const decideVendor = (
  state: BatchState,
  command: VendorCommand
): { readonly events: ReadonlyArray<VendorEvent> } | VendorRejection | "wrong-status" => {
  const batchId = state.batchId
  if (command.type === "VendorSubmit") {
    if (state.status !== "in_progress") return "wrong-status"
    if (state.vendor.has(command.tag)) return { _tag: "GroupExists", tag: command.tag }
    const taken = vendorLines(state)
    const bad = command.lines.find((line) => !state.started.has(line) || state.lines.has(line) || taken.has(line))
    if (bad !== undefined) return { _tag: "LineNotHeld", line: bad }
    const { tag, upstream, lines, at } = command
    return { events: [{ type: "BatchVendorSubmitting", data: { batchId, tag, upstream, lines, at } }] }
  }
  const group = state.vendor.get(command.tag)
  if (group === undefined) return { _tag: "NoSuchGroup", tag: command.tag }
  if (group.vendorBatchId !== null) {
    return group.vendorBatchId === command.vendorBatchId ? { events: [] } : { _tag: "GroupExists", tag: command.tag }
  }
  const { tag, vendorBatchId, at } = command
  return { events: [{ type: "BatchVendorAccepted", data: { batchId, tag, vendorBatchId, at } }] }
}
