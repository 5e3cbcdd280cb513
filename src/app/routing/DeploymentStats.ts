/**
 * What this instance has seen of each deployment, for `GET /admin/upstreams`, the console and `/metrics`: requests
 * in flight, totals by outcome, the error rate over the last outcomes and the latency to the first byte. Counted
 * per instance (each process reports its own traffic); the health that routing acts on is `DeploymentStates`'.
 */

const WINDOW = 200

export type OutcomeKind = "success" | "rate_limited" | "failed" | "auth" | "rejected" | "cancelled"

export class DeploymentStats {
  inFlight = 0
  readonly totals: Record<OutcomeKind, number> = {
    success: 0,
    rate_limited: 0,
    failed: 0,
    auth: 0,
    rejected: 0,
    cancelled: 0
  }
  /** The last outcomes (true: an error) and latencies, as rings. */
  private readonly errors: Array<boolean> = []
  private readonly latencies: Array<number> = []
  private next = 0
  lastError: { readonly at: number; readonly message: string } | undefined

  record(kind: OutcomeKind, latencyMs: number): void {
    this.totals[kind] += 1
    if (kind === "cancelled") return
    const error = kind === "rate_limited" || kind === "failed" || kind === "auth"
    const slot = this.next % WINDOW
    this.errors[slot] = error
    this.latencies[slot] = latencyMs
    this.next += 1
  }

  /** Errors (rate limits, failures, refused credentials) among the last outcomes, 0 to 1. */
  errorRate(): number {
    if (this.errors.length === 0) return 0
    return this.errors.filter(Boolean).length / this.errors.length
  }

  /** The `q` quantile (0 to 1) of the last latencies in ms, or null before any. */
  latency(q: number): number | null {
    if (this.latencies.length === 0) return null
    const sorted = [...this.latencies].sort((a, b) => a - b)
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? null
  }
}

/** Where this instance sent each conversation's last turn, so that its next turn goes there too (an hour, 100,000 at most). */
export class ConversationTrails {
  private readonly entries = new Map<string, { readonly deployment: string; readonly at: number }>()

  recall(
    model: string,
    trail: { readonly continues: ReadonlyArray<string> } | undefined,
    now: number
  ): string | undefined {
    if (trail === undefined || this.entries.size === 0) return undefined
    for (const digest of trail.continues) {
      const found = this.entries.get(`${model}:${digest}`)
      if (found !== undefined && now - found.at < TRAIL_TTL_MS) return found.deployment
    }
    return undefined
  }

  remember(model: string, trail: { readonly whole: string } | undefined, deployment: string, now: number): void {
    if (trail === undefined) return
    const key = `${model}:${trail.whole}`
    this.entries.delete(key)
    if (this.entries.size >= MAX_TRAILS) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(key, { deployment, at: now })
  }
}

const TRAIL_TTL_MS = 60 * 60_000
const MAX_TRAILS = 100_000
