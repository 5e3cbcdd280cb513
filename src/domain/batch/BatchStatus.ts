/**
 * Every status of OpenAI's batch object, in the order a batch can pass through them (domain/batch/BatchJob.ts): one
 * list for the API, the admin filters, the CLI and the metrics.
 */
export const BATCH_STATUSES = [
  "validating",
  "in_progress",
  "finalizing",
  "completed",
  "failed",
  "expired",
  "cancelling",
  "cancelled"
] as const
export type BatchStatus = (typeof BATCH_STATUSES)[number]
