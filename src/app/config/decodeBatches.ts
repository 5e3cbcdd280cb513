/**
 * The operator config's `batches:` section: how the batch worker shares the deployments with interactive traffic
 * (`deploymentSharePercent`: the part of each deployment's and upstream's `maxConcurrency` batch lines may take), how
 * many lines of one batch run at once, and how long a worker's claim on a batch lasts (the longest a batch waits for
 * another instance after its worker died).
 */
import type { Input } from "./ConfigInput.ts"

export interface BatchesConfig {
  /** Percent (1–100) of each deployment's and upstream's `maxConcurrency` that batch lines may take at once. */
  readonly deploymentSharePercent: number
  /** Lines of one batch in flight at once on one instance. */
  readonly concurrency: number
  /** How long a worker's claim on a batch lasts without renewal. */
  readonly leaseSeconds: number
  /** How often a vendor batch (an upstream with `batch: true`) is polled for its results. */
  readonly vendorPollMillis: number
}

export const BatchesDefaults: BatchesConfig = {
  deploymentSharePercent: 50,
  concurrency: 4,
  leaseSeconds: 120,
  vendorPollMillis: 30_000
}

export const decodeBatches = (input: Input, raw: unknown): BatchesConfig => {
  const fields =
    input.object(
      raw,
      "batches",
      ["deploymentSharePercent", "concurrency", "leaseSeconds", "vendorPollMillis"],
      false
    ) ?? {}
  const share = input.positiveInt(
    fields.deploymentSharePercent,
    "batches.deploymentSharePercent",
    BatchesDefaults.deploymentSharePercent
  )
  if (share > 100) input.issue("batches.deploymentSharePercent", "expected a percentage from 1 to 100")
  return {
    deploymentSharePercent: Math.min(share, 100),
    concurrency: input.positiveInt(fields.concurrency, "batches.concurrency", BatchesDefaults.concurrency),
    leaseSeconds: input.positiveInt(fields.leaseSeconds, "batches.leaseSeconds", BatchesDefaults.leaseSeconds),
    vendorPollMillis: input.positiveInt(
      fields.vendorPollMillis,
      "batches.vendorPollMillis",
      BatchesDefaults.vendorPollMillis
    )
  }
}
