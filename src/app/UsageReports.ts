/** Usage reports: sums of the `usage_daily` projection, filtered and grouped. */
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

export class UsageReports extends Context.Service<
  UsageReports,
  { readonly report: (query: UsageQuery) => Effect.Effect<ReadonlyArray<UsageLine>, StoreUnavailable> }
>()("tollgate/app/UsageReports") {}
