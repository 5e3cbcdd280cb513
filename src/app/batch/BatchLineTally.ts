/**
 * What this instance's batch worker has finished since it started, by endpoint and outcome: lines, and the
 * micro-dollars they captured. Counted as each line's result commits (BatchCommits.ts), read by `/metrics` at scrape
 * time; nothing on the interactive request path touches it. Per process, as Prometheus counters are: a fleet's total
 * is the sum over its instances.
 */
import type { LineOutcome, LineResult } from "../../domain/batch/BatchJob.ts"
import { parseDecimal } from "../../domain/Money.ts"

export interface LineTally {
  readonly endpoint: string
  readonly outcome: LineOutcome
  readonly lines: number
  /** Micro-dollars captured by these lines. */
  readonly charged: bigint
}

export interface LineTallies {
  readonly count: (endpoint: string, result: LineResult) => void
  readonly snapshot: () => ReadonlyArray<LineTally>
}

export const makeLineTallies = (): LineTallies => {
  const tallies = new Map<string, LineTally>()
  return {
    count: (endpoint, result) => {
      const key = `${endpoint} ${result.outcome}`
      const before = tallies.get(key) ?? { endpoint, outcome: result.outcome, lines: 0, charged: 0n }
      const cost = parseDecimal(result.cost) ?? 0n
      tallies.set(key, { ...before, lines: before.lines + 1, charged: before.charged + cost })
    },
    snapshot: () => [...tallies.values()]
  }
}
