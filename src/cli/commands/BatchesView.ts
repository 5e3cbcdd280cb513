/**
 * What `tollgate batches` prints: the list, one batch, and the progress and closing line of `tail`. Pure, so the
 * layout is tested without a server.
 */
import type { AdminBatch, AdminBatchList } from "../AdminApi.ts"
import { type Column, renderFields, renderTable } from "../Table.ts"

const none = "-"
const orNone = (value: string | number | null | undefined) =>
  value === undefined || value === null || value === "" ? none : String(value)

const ENDED = ["completed", "failed", "expired", "cancelled"]

/** Whether the batch has ended (nothing moves it any more). */
export const batchEnded = (batch: AdminBatch): boolean => ENDED.includes(batch.status)

const done = (batch: AdminBatch) => batch.requestCounts.completed + batch.requestCounts.failed

/** `12/40`: lines with a result out of all. */
const linesText = (batch: AdminBatch) => `${done(batch)}/${batch.requestCounts.total}`

/** What the progress bar shows: the status and lines done, and the share done in percent. */
export const batchProgress = (batch: AdminBatch): { readonly label: string; readonly percent: number } => ({
  label: `${batch.status} ${linesText(batch)} lines`,
  percent: batch.requestCounts.total === 0 ? 100 : (done(batch) * 100) / batch.requestCounts.total
})

/** `batch_1 completed: 24 completed, 1 failed of 25; charged 0.001234, refunded 0.000100`. */
export const batchSummaryLine = (batch: AdminBatch): string => {
  const { total, completed, failed } = batch.requestCounts
  return (
    `${batch.id} ${batch.status}: ${completed} completed, ${failed} failed of ${total}; ` +
    `charged ${orNone(batch.charged)}, refunded ${orNone(batch.refunded)}`
  )
}

export const batchView = (batch: AdminBatch): string => {
  const { total, completed, failed } = batch.requestCounts
  const pending = batch.requestCounts.pending ?? total - completed - failed
  return renderFields([
    ["id", batch.id],
    ["account", orNone(batch.accountId)],
    ["key", orNone(batch.keyId)],
    ["surface", orNone(batch.surface)],
    ["endpoint", orNone(batch.endpoint)],
    ["status", batch.status],
    ["lines", `${total} (completed ${completed}, failed ${failed}, pending ${pending})`],
    ["charged", orNone(batch.charged)],
    ["held", orNone(batch.held)],
    ["refunded", orNone(batch.refunded)],
    ["created", orNone(batch.createdAt)],
    ["expires", orNone(batch.expiresAt)],
    ["ended", orNone(batch.endedAt)],
    ["output file", orNone(batch.outputFileId)],
    ["error file", orNone(batch.errorFileId)],
    ...(batch.error === undefined || batch.error === null ? [] : [["error", batch.error] as const])
  ])
}

const listColumns: ReadonlyArray<Column<AdminBatch>> = [
  { header: "ID", cell: (batch) => batch.id },
  { header: "ACCOUNT", cell: (batch) => orNone(batch.accountId) },
  { header: "SURFACE", cell: (batch) => orNone(batch.surface) },
  { header: "STATUS", cell: (batch) => batch.status },
  { header: "LINES", align: "right", cell: linesText },
  { header: "FAILED", align: "right", cell: (batch) => String(batch.requestCounts.failed) },
  { header: "CHARGED", align: "right", cell: (batch) => orNone(batch.charged) },
  { header: "CREATED", cell: (batch) => orNone(batch.createdAt) }
]

export const batchListView = (list: AdminBatchList): string => {
  if (list.data.length === 0) return "No batches."
  const table = renderTable(listColumns, list.data)
  const last = list.last_id
  return list.has_more === true && last !== undefined && last !== null
    ? `${table}\nMore: tollgate batches list --after ${last} (with the same filters)`
    : table
}
