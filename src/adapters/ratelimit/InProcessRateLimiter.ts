/** Rate limits kept in this process: right for one instance; several instances share Redis instead. */
import { Clock, Effect, Layer } from "effect"
import { type Admission, MINUTE_MS, RateLimited, RateLimiter, secondsToNextMinute } from "../../app/RateLimiter.ts"
import { effectiveRateLimits, noRateLimits, type RateLimits } from "../../domain/keys/RateLimits.ts"

interface KeyWindow {
  minute: number
  requests: number
  tokens: number
  inFlight: number
}

export const layer = (defaults: RateLimits): Layer.Layer<RateLimiter> =>
  Layer.sync(RateLimiter, () => {
    const windows = new Map<string, KeyWindow>()
    const current = (keyId: string, now: number): KeyWindow => {
      const minute = Math.floor(now / MINUTE_MS)
      let window = windows.get(keyId)
      if (window === undefined) {
        window = { minute, requests: 0, tokens: 0, inFlight: 0 }
        windows.set(keyId, window)
      } else if (window.minute !== minute) {
        window.minute = minute
        window.requests = 0
        window.tokens = 0
      }
      return window
    }
    return RateLimiter.of({
      admit: (keyId, own, options) =>
        Effect.gen(function* () {
          const limits =
            options?.defaults === false ? (own ?? noRateLimits) : effectiveRateLimits(own ?? defaults, defaults)
          if (limits.rpm === null && limits.tpm === null && limits.concurrency === null) return unlimited
          const now = yield* Clock.currentTimeMillis
          const window = current(keyId, now)
          if (limits.concurrency !== null && window.inFlight >= limits.concurrency) {
            return yield* new RateLimited({ limit: "concurrency", allowed: limits.concurrency, retryAfterSeconds: 1 })
          }
          const retryAfterSeconds = secondsToNextMinute(now)
          if (limits.rpm !== null && window.requests >= limits.rpm) {
            return yield* new RateLimited({ limit: "rpm", allowed: limits.rpm, retryAfterSeconds })
          }
          if (limits.tpm !== null && window.tokens >= limits.tpm) {
            return yield* new RateLimited({ limit: "tpm", allowed: limits.tpm, retryAfterSeconds })
          }
          if (options?.countRequest !== false) window.requests += 1
          window.inFlight += 1
          let released = false
          return {
            release: Effect.sync(() => {
              if (released) return
              released = true
              window.inFlight -= 1
            })
          } satisfies Admission
        }),
      recordTokens: (keyId, tokens) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          if (tokens > 0) current(keyId, now).tokens += tokens
        })
    })
  })

const unlimited: Admission = { release: Effect.void }
