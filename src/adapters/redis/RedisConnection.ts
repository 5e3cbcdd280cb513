/**
 * A Redis connection for the state instances share (rate limits, deployments' health), opened when its layer is
 * built and closed with its scope. ioredis is loaded only then, so a gateway without `REDIS_URL` never loads it.
 * Requests fail at once while the connection is down (no offline queue, one retry): callers log and go on without
 * Redis rather than wait on it. Connection trouble is reported as events, which are dropped here: the calls fail on
 * their own and are logged where they are made.
 */
import { Effect, Redacted } from "effect"

export const acquireRedis = (url: Redacted.Redacted<string>) =>
  Effect.gen(function* () {
    const { Redis } = yield* Effect.promise(() => import("ioredis"))
    const redis = yield* Effect.acquireRelease(
      Effect.sync(
        () => new Redis(Redacted.value(url), { lazyConnect: false, maxRetriesPerRequest: 1, enableOfflineQueue: false })
      ),
      (client) => Effect.promise(() => client.quit().catch(() => client.disconnect()))
    )
    redis.on("error", () => undefined)
    return redis
  })
