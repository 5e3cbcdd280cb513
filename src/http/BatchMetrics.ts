/**
 * Batch figures for `/metrics`: batches by status, read from the store at scrape time (the same on every instance of
 * one database), and the lines this instance's batch worker finished, by endpoint and outcome, with the micro-dollars
 * they captured (counters of this process, kept by app/batch/BatchLineTally.ts as each line's result commits: nothing
 * is counted on the interactive request path). Labels are bounded: the batch endpoints and the three outcomes.
 */
import { Counter, Gauge, type Registry } from "prom-client"
import type { Batches } from "../app/batch/Batches.ts"
import { BATCH_STATUSES } from "../domain/batch/BatchStatus.ts"

export const registerBatchMetrics = (
  registry: Registry,
  batches: Batches["Service"],
  /** Batches per status as the last store snapshot read them (awaits this scrape's read). */
  statuses: () => Promise<Readonly<Record<string, number>>>
): void => {
  new Gauge({
    name: "tollgate_batches",
    help: "Batches by status (both batch surfaces; a deleted message batch is no longer counted)",
    labelNames: ["status"],
    registers: [registry],
    async collect() {
      const counts = await statuses()
      this.reset()
      for (const status of BATCH_STATUSES) this.set({ status }, counts[status] ?? 0)
    }
  })
  new Counter({
    name: "tollgate_batch_lines_total",
    help: "Batch lines this instance finished, by endpoint and outcome (succeeded: answered; failed; cancelled)",
    labelNames: ["endpoint", "outcome"],
    registers: [registry],
    collect() {
      this.reset()
      for (const tally of batches.lineStats()) {
        this.inc({ endpoint: tally.endpoint, outcome: tally.outcome }, tally.lines)
      }
    }
  })
  new Counter({
    name: "tollgate_batch_line_charged_micro_usd_total",
    help: "Micro-dollars captured by the batch lines this instance finished, by endpoint (an integer)",
    labelNames: ["endpoint"],
    registers: [registry],
    collect() {
      this.reset()
      const byEndpoint = new Map<string, bigint>()
      for (const tally of batches.lineStats()) {
        byEndpoint.set(tally.endpoint, (byEndpoint.get(tally.endpoint) ?? 0n) + tally.charged)
      }
      for (const [endpoint, charged] of byEndpoint) this.inc({ endpoint }, Number(charged))
    }
  })
}
