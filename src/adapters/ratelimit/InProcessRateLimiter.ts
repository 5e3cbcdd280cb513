/** Rate limits kept in this process: right for one instance; several instances share Redis instead. */
import { Clock, Effect, Layer } from "effect"
import {
  type Admission,
  limitReached,
  limitsFor,
  MINUTE_MS,
  RateLimiter,
  refusal,
  unlimited
} from "../../app/RateLimiter.ts"
import type { RateLimits } from "../../domain/keys/RateLimits.ts"

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
          const limits = limitsFor(own, defaults, options)
          if (limits === undefined) return unlimited
          const now = yield* Clock.currentTimeMillis
          const window = current(keyId, now)
          const reached = limitReached(limits, window)
          if (reached !== undefined) return yield* refusal(limits, reached, now)
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
