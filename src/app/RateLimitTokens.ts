/**
 * Feeds the rate limiter's tokens-per-minute budgets from real usage: the Ledger, decorated, remembers which key
 * placed each hold and, when a call settles, counts the tokens its usage reports against that key. Video tasks
 * (settled with a companion event, often by another instance's worker) are not token-rate-limited.
 */
import { Effect, Layer } from "effect"
import { usageMetrics } from "../domain/ledger/UsageMetrics.ts"
import { Ledger } from "./Ledger.ts"
import { RateLimiter } from "./RateLimiter.ts"

/** Holds a process has open at once; past this the oldest entries are forgotten (a crashed request's, say). */
const MAX_TRACKED_HOLDS = 100_000

export const layer = Layer.effect(
  Ledger,
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const limiter = yield* RateLimiter
    const keyOfHold = new Map<string, string>()
    const countTokens = (holdId: string, usage: unknown) => {
      const keyId = keyOfHold.get(holdId)
      if (keyId === undefined) return Effect.void
      keyOfHold.delete(holdId)
      const metrics = usageMetrics(usage)
      return limiter.recordTokens(keyId, metrics.inputTokens + metrics.outputTokens)
    }
    return Ledger.of({
      ...ledger,
      placeHold: (input) =>
        Effect.tap(ledger.placeHold(input), ({ holdId }) =>
          Effect.sync(() => {
            if (input.keyId === null) return
            if (keyOfHold.size >= MAX_TRACKED_HOLDS) keyOfHold.delete(keyOfHold.keys().next().value as string)
            keyOfHold.set(holdId, input.keyId)
          })
        ),
      // A lingering hold's settlement knows its key already.
      placeHoldLingering: (input, onRefused, until) =>
        Effect.map(ledger.placeHoldLingering(input, onRefused, until), (pending) => ({
          ...pending,
          settleDelivered: (cost, usage) =>
            Effect.tap(pending.settleDelivered(cost, usage), () => {
              if (input.keyId === null) return Effect.void
              const metrics = usageMetrics(usage)
              return limiter.recordTokens(input.keyId, metrics.inputTokens + metrics.outputTokens)
            })
        })),
      settle: (accountId, holdId, cost, usage) =>
        Effect.tap(ledger.settle(accountId, holdId, cost, usage), () => countTokens(holdId, usage)),
      // A delivered response used its tokens whether its settlement committed now or is still being retried.
      settleDelivered: (accountId, holdId, cost, usage) =>
        Effect.tap(ledger.settleDelivered(accountId, holdId, cost, usage), () => countTokens(holdId, usage)),
      release: (accountId, holdId, reason) =>
        Effect.ensuring(
          ledger.release(accountId, holdId, reason),
          Effect.sync(() => keyOfHold.delete(holdId))
        )
    })
  })
)
