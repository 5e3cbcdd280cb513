/**
 * Usage reports: sums of the `usage_daily` projection, filtered and grouped; and each request's own charge, from the
 * `holds` projection (one hold per billed request, its `captured` the whole charge, overage included).
 */
import { Context, type Effect, Result } from "effect"
import { Base64Url } from "effect/encoding"
import { isUuid } from "../domain/Ids.ts"
import { parseInstant } from "../domain/Instants.ts"
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

/** What usage counts, per row of the `usage_daily` projection and per line of a report. */
export interface UsageCounts {
  /** Settled calls. */
  readonly requests: bigint
  readonly inputTokens: bigint
  readonly outputTokens: bigint
  /** Of the input, read from a vendor's prompt cache (not counted in `inputTokens`). */
  readonly cacheReadTokens: bigint
  /** Of the input, written to a vendor's prompt cache (not counted in `inputTokens`). */
  readonly cacheWriteTokens: bigint
  readonly images: bigint
  readonly videoSeconds: bigint
  /** Micro-dollars: captured plus any overage charged. */
  readonly cost: bigint
}

export const noUsage: UsageCounts = {
  requests: 0n,
  inputTokens: 0n,
  outputTokens: 0n,
  cacheReadTokens: 0n,
  cacheWriteTokens: 0n,
  images: 0n,
  videoSeconds: 0n,
  cost: 0n
}

export const addUsage = <A extends UsageCounts>(a: A, b: UsageCounts): A => ({
  ...a,
  requests: a.requests + b.requests,
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
  cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  images: a.images + b.images,
  videoSeconds: a.videoSeconds + b.videoSeconds,
  cost: a.cost + b.cost
})

export interface UsageLine extends UsageCounts {
  readonly day?: string
  readonly model?: string
  /** The key id; null for calls made without a key. */
  readonly key?: string | null
}

export interface RequestChargeQuery {
  readonly accountId: string
  readonly keyId?: string | undefined
  /** The `x-request-id` the response carried. */
  readonly requestId?: string | undefined
  /** Requests placed strictly before this instant (a time filter, not a page cursor: requests share instants). */
  readonly before?: Date | undefined
  /** Requests listed after this one (the previous page's last `cursor`): placed earlier, or at the same instant with a lower hold id. */
  readonly after?: ChargeCursor | undefined
  readonly limit: number
}

/**
 * A request's place in the newest-first listing: its hold's placement instant, to the microsecond the store keeps
 * (a millisecond `Date` would skip rows placed within the same millisecond), and its hold id, which breaks ties.
 */
export interface ChargeCursor {
  /** ISO 8601 in UTC with six fractional digits. */
  readonly placedAt: string
  readonly holdId: string
}

const CURSOR_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

/** The opaque text a client passes back as `cursor`. */
export const encodeChargeCursor = (cursor: ChargeCursor): string =>
  Base64Url.encode(`${cursor.placedAt} ${cursor.holdId}`)

/** The cursor in `text`, or undefined when it is not one this listing wrote. */
export const decodeChargeCursor = (text: string): ChargeCursor | undefined => {
  if (text.length > 100 || !/^[A-Za-z0-9_-]+$/.test(text)) return undefined
  const decoded = Base64Url.decodeString(text)
  if (Result.isFailure(decoded)) return undefined
  const [placedAt = "", holdId = "", ...rest] = decoded.success.split(" ")
  return rest.length === 0 && CURSOR_INSTANT.test(placedAt) && parseInstant(placedAt) !== undefined && isUuid(holdId)
    ? { placedAt, holdId }
    : undefined
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
  /** Where the next page starts when this is the last one listed. */
  readonly cursor: ChargeCursor
}

export class UsageReports extends Context.Service<
  UsageReports,
  {
    readonly report: (query: UsageQuery) => Effect.Effect<ReadonlyArray<UsageLine>, StoreUnavailable>
    /** The account's requests, newest first. */
    readonly requests: (query: RequestChargeQuery) => Effect.Effect<ReadonlyArray<RequestCharge>, StoreUnavailable>
  }
>()("tollgate/app/UsageReports") {}
