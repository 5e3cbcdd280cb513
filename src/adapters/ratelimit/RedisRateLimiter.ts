/**
 * Rate limits shared by every instance through Redis (`REDIS_URL`). One Lua script decides an admission atomically:
 * per key, a counter of the minute's requests and one of its tokens (both expire after two minutes), and a sorted
 * set of in-flight slots scored by their start, so a slot whose instance died stops counting after SLOT_TTL_MS
 * instead of leaking. If Redis cannot be reached the request is admitted and a warning logged: a limiter outage must
 * not take the gateway down with it.
 */
import { Clock, Effect, Layer, type Redacted } from "effect"
import { randomUUID } from "node:crypto"
import { acquireRedis } from "../redis/RedisConnection.ts"
import { type Admission, limitsFor, MINUTE_MS, RateLimiter, refusal, unlimited } from "../../app/RateLimiter.ts"
import type { RateLimits } from "../../domain/keys/RateLimits.ts"

/** A slot older than this no longer counts against concurrency (its request, or its instance, is gone). */
const SLOT_TTL_MS = 15 * MINUTE_MS

// KEYS: requests, tokens, slots. ARGV: rpm, tpm, concurrency (0 = none), now, slot id, slot ttl ms, count the
// request (1) or take a slot only (0).
// Returns 0 when admitted, else 1 (rpm), 2 (tpm), 3 (concurrency), checked in `limitReached`'s order (RateLimiter.ts).
const ADMIT = `
local rpm, tpm, conc = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now, ttl = tonumber(ARGV[4]), tonumber(ARGV[6])
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - ttl)
  if redis.call('ZCARD', KEYS[3]) >= conc then return 3 end
end
if rpm > 0 and tonumber(redis.call('GET', KEYS[1]) or '0') >= rpm then return 1 end
if tpm > 0 and tonumber(redis.call('GET', KEYS[2]) or '0') >= tpm then return 2 end
if ARGV[7] == '1' then
  redis.call('INCR', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], 120000)
end
if conc > 0 then
  redis.call('ZADD', KEYS[3], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[3], ttl)
end
return 0
`

const reasons = ["rpm", "tpm", "concurrency"] as const

export const layer = (url: Redacted.Redacted<string>, defaults: RateLimits): Layer.Layer<RateLimiter> =>
  Layer.effect(
    RateLimiter,
    Effect.gen(function* () {
      const redis = yield* acquireRedis(url)
      const keys = (keyId: string, minute: number) => [
        `tollgate:rl:${keyId}:${minute}:requests`,
        `tollgate:rl:${keyId}:${minute}:tokens`,
        `tollgate:rl:${keyId}:slots`
      ]
      const call = <A>(label: string, run: () => Promise<A>) =>
        Effect.tryPromise(run).pipe(
          Effect.tapError((error) =>
            Effect.logWarning("rate limiter unavailable; admitting").pipe(
              Effect.annotateLogs({ operation: label, error: String((error as Error).message ?? error) })
            )
          )
        )
      return RateLimiter.of({
        admit: (keyId, own, options) =>
          Effect.gen(function* () {
            const limits = limitsFor(own, defaults, options)
            if (limits === undefined) return unlimited
            const now = yield* Clock.currentTimeMillis
            const [requests, tokens, slots] = keys(keyId, Math.floor(now / MINUTE_MS))
            const slot = randomUUID()
            const verdict = yield* call("admit", () =>
              redis.eval(
                ADMIT,
                3,
                requests,
                tokens,
                slots,
                limits.rpm ?? 0,
                limits.tpm ?? 0,
                limits.concurrency ?? 0,
                now,
                slot,
                SLOT_TTL_MS,
                options?.countRequest === false ? 0 : 1
              )
            ).pipe(Effect.orElseSucceed(() => 0))
            if (verdict !== 0) return yield* refusal(limits, reasons[Number(verdict) - 1] ?? "rpm", now)
            if (limits.concurrency === null) return unlimited
            let released = false
            return {
              release: Effect.suspend(() => {
                if (released) return Effect.void
                released = true
                return call("release", () => redis.zrem(slots, slot)).pipe(Effect.ignore)
              })
            } satisfies Admission
          }),
        recordTokens: (keyId, count) =>
          Effect.gen(function* () {
            if (count <= 0) return
            const now = yield* Clock.currentTimeMillis
            const [, tokens] = keys(keyId, Math.floor(now / MINUTE_MS))
            yield* call("tokens", () => redis.multi().incrby(tokens, count).pexpire(tokens, 120_000).exec()).pipe(
              Effect.ignore
            )
          })
      })
    })
  )
