/** The rate-limit policy both limiters (in process, in Redis) apply: the limits used, the check order, the refusal. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { limitReached, limitsFor, MINUTE_MS, refusal } from "../../src/app/RateLimiter.ts"
import { noRateLimits, type RateLimits } from "../../src/domain/keys/RateLimits.ts"

const figure = fc.option(fc.integer({ min: 1, max: 50 }), { nil: null })
const limits = fc.record({ rpm: figure, tpm: figure, concurrency: figure })
const count = fc.integer({ min: 0, max: 60 })

describe("rate-limit policy", () => {
  it("a key's null figures take the defaults; with defaults off, nothing; all null takes no slot", () => {
    const defaults: RateLimits = { rpm: 5, tpm: null, concurrency: 2 }
    assert.deepStrictEqual(limitsFor({ rpm: null, tpm: 100, concurrency: null }, defaults), {
      rpm: 5,
      tpm: 100,
      concurrency: 2
    })
    assert.deepStrictEqual(limitsFor(undefined, defaults), defaults)
    assert.isUndefined(limitsFor(undefined, defaults, { defaults: false }))
    assert.isUndefined(limitsFor(noRateLimits, noRateLimits))
  })

  it("refuses on the first limit reached, concurrency before requests before tokens, and only then", () =>
    fc.assert(
      fc.property(limits, count, count, count, (l, inFlight, requests, tokens) => {
        const reached = limitReached(l, { inFlight, requests, tokens })
        const over = {
          concurrency: l.concurrency !== null && inFlight >= l.concurrency,
          rpm: l.rpm !== null && requests >= l.rpm,
          tpm: l.tpm !== null && tokens >= l.tpm
        }
        const expected = (["concurrency", "rpm", "tpm"] as const).find((kind) => over[kind])
        assert.strictEqual(reached, expected)
      })
    ))

  it("a refusal names the limit; a slot may free in a second, a minute's budget returns at the next minute", () => {
    const l: RateLimits = { rpm: 3, tpm: 10, concurrency: 1 }
    const now = 7 * MINUTE_MS + 45_500
    assert.deepInclude(refusal(l, "concurrency", now), { limit: "concurrency", allowed: 1, retryAfterSeconds: 1 })
    assert.deepInclude(refusal(l, "rpm", now), { limit: "rpm", allowed: 3, retryAfterSeconds: 15 })
    assert.deepInclude(refusal(l, "tpm", now), { limit: "tpm", allowed: 10, retryAfterSeconds: 15 })
  })
})
