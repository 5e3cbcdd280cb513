/**
 * Per-key rate limits at admission: requests per minute, tokens per minute and requests in flight. A request is
 * admitted or refused before anything is held; an admitted one holds a slot until its response ends (the whole
 * stream, for a streamed one). Tokens are counted when a call settles, from its real usage, and a key over its
 * minute's budget is refused until the next minute. Windows are fixed UTC minutes.
 */
import { Context, Effect, Schema } from "effect"
import { effectiveRateLimits, noRateLimits, type RateLimits } from "../domain/keys/RateLimits.ts"

export type RateLimitKind = "rpm" | "tpm" | "concurrency"

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  limit: Schema.Literals(["rpm", "tpm", "concurrency"]),
  allowed: Schema.Number,
  retryAfterSeconds: Schema.Number
}) {
  override get message() {
    const what = {
      rpm: `${this.allowed} requests per minute; retry after ${this.retryAfterSeconds} s`,
      tpm: `${this.allowed} tokens per minute; retry after ${this.retryAfterSeconds} s`,
      concurrency: `${this.allowed} requests at a time; retry when one finishes`
    }[this.limit]
    return `rate limit reached: this key allows ${what}`
  }
}

/** An admitted request's slot: `release` frees it (idempotent). */
export interface Admission {
  readonly release: Effect.Effect<void>
}

export class RateLimiter extends Context.Service<
  RateLimiter,
  {
    /**
     * Admits a request of `keyId` under its own limits (null figures: the operator's defaults for keys, or no limit
     * with `defaults: false`, as for deployments and upstreams). `countRequest: false` takes a concurrency slot
     * without counting a request in the minute (a background response's run, whose request was counted when made).
     */
    readonly admit: (
      keyId: string,
      limits: RateLimits | undefined,
      options?: { readonly defaults?: boolean; readonly countRequest?: boolean }
    ) => Effect.Effect<Admission, RateLimited>
    /** Counts a settled call's tokens against its key's current minute. */
    readonly recordTokens: (keyId: string, tokens: number) => Effect.Effect<void>
  }
>()("tollgate/app/RateLimiter") {}

export const MINUTE_MS = 60_000

/** Whole seconds until the fixed minute that contains `now` ends (at least 1). */
export const secondsToNextMinute = (now: number): number =>
  Math.max(1, Math.ceil((MINUTE_MS - (now % MINUTE_MS)) / 1000))

/**
 * The policy every limiter applies (one in process, one in Redis): which limits an admission is judged by, in which
 * order they are checked, and what a refusal says.
 */

/**
 * The limits a request of `own` is admitted under: each null figure the operator's default, or no limit at all with
 * `defaults: false`; undefined when nothing is limited (the request takes no slot).
 */
export const limitsFor = (
  own: RateLimits | undefined,
  defaults: RateLimits,
  options?: { readonly defaults?: boolean }
): RateLimits | undefined => {
  const limits = options?.defaults === false ? (own ?? noRateLimits) : effectiveRateLimits(own ?? defaults, defaults)
  return limits.rpm === null && limits.tpm === null && limits.concurrency === null ? undefined : limits
}

/** The limit a key's window has reached, checked in order: requests in flight, then the minute's requests, then tokens. */
export const limitReached = (
  limits: RateLimits,
  window: { readonly inFlight: number; readonly requests: number; readonly tokens: number }
): RateLimitKind | undefined =>
  limits.concurrency !== null && window.inFlight >= limits.concurrency
    ? "concurrency"
    : limits.rpm !== null && window.requests >= limits.rpm
      ? "rpm"
      : limits.tpm !== null && window.tokens >= limits.tpm
        ? "tpm"
        : undefined

/** The refusal for a reached `limit` at `now`: a slot may free in a second; a minute's budget comes back next minute. */
export const refusal = (limits: RateLimits, limit: RateLimitKind, now: number): RateLimited =>
  new RateLimited({
    limit,
    allowed: limits[limit] ?? 0,
    retryAfterSeconds: limit === "concurrency" ? 1 : secondsToNextMinute(now)
  })

/** The admission of a request that takes no slot. */
export const unlimited: Admission = { release: Effect.void }
