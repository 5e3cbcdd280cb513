/**
 * Usage reports: sums of the `usage_daily` projection, filtered and grouped; and each request's own charge, from the
 * `holds` projection (one hold per billed request, its `captured` the whole charge, overage included).
 */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "./StoreErrors.ts"

export const USAGE_GROUPS = ["day", "model", "key"] as const
export type UsageGroup = (typeof USAGE_GROUPS)[number]

export interface UsageQuery {
  readonly accountId?: string | undefined
  readonly keyId?: string | undefined
  readonly model?: string | undefined
  /** Inclusive first day (YYYY-MM-DD, UTC). */
  readonly from?: string | undefined
  /** Exclusive last day (YYYY-MM-DD, UTC). */
  readonly to?: string | undefined
  readonly groupBy: ReadonlyArray<UsageGroup>
}

export interface UsageLine {
  readonly day?: string
  readonly model?: string
  /** The key id; null for calls made without a key. */
  readonly key?: string | null
  readonly requests: bigint
  readonly inputTokens: bigint
  readonly outputTokens: bigint
  /** Of the input, read from a vendor's prompt cache (not counted in `inputTokens`). */
  readonly cacheReadTokens: bigint
  /** Of the input, written to a vendor's prompt cache (not counted in `inputTokens`). */
  readonly cacheWriteTokens: bigint
  readonly images: bigint
  readonly videoSeconds: bigint
  readonly cost: bigint
}

export interface RequestChargeQuery {
  readonly accountId: string
  readonly keyId?: string | undefined
  /** The `x-request-id` the response carried. */
  readonly requestId?: string | undefined
  /** Requests placed strictly before this instant (the previous page's last `createdAt`). */
  readonly before?: Date | undefined
  readonly limit: number
}

/** One request's charge: what was held for it and what it cost in the end (0 when it was released). */
export interface RequestCharge {
  readonly requestId: string | null
  readonly model: string | null
  readonly keyId: string | null
  /** `pending` while it runs; `settled` once billed; `released` when it cost nothing. */
  readonly status: string
  readonly held: bigint
  readonly cost: bigint
  readonly createdAt: Date
  readonly resolvedAt: Date | null
}

export class UsageReports extends Context.Service<
  UsageReports,
  {
    readonly report: (query: UsageQuery) => Effect.Effect<ReadonlyArray<UsageLine>, StoreUnavailable>
    /** The account's requests, newest first. */
    readonly requests: (query: RequestChargeQuery) => Effect.Effect<ReadonlyArray<RequestCharge>, StoreUnavailable>
  }
>()("tollgate/app/UsageReports") {}
