/**
 * Deployment health shared by every instance through Redis (`REDIS_URL`): one key per deployment that is not
 * plainly healthy (JSON, expiring when its state stops meaning anything) and one hash of disabled upstreams. A read
 * is one round trip (MGET and HGETALL pipelined). Redis trouble is logged and routing goes on with what is known:
 * nothing, for a read, which routes as if every deployment were healthy.
 */
import { Effect, Layer, type Redacted } from "effect"
import type { Health } from "../../domain/routing/DeploymentHealth.ts"
import { acquireRedis } from "../redis/RedisConnection.ts"
import { DeploymentStates, type UpstreamDisabled } from "../../app/ports/DeploymentStates.ts"

const PREFIX = "tollgate:deployment:"
const DISABLED = "tollgate:upstreams:disabled"

const parse = <A>(text: unknown): A | undefined => {
  if (typeof text !== "string") return undefined
  try {
    return JSON.parse(text) as A
  } catch {
    return undefined
  }
}

export const layer = (url: Redacted.Redacted<string>): Layer.Layer<DeploymentStates> =>
  Layer.effect(
    DeploymentStates,
    Effect.gen(function* () {
      const redis = yield* acquireRedis(url)
      const empty = { health: new Map<string, Health>(), disabled: new Map<string, UpstreamDisabled>() }
      const warn = (what: string) => (error: unknown) =>
        Effect.logWarning(`deployment states: Redis ${what} failed; routing on what this instance knows`).pipe(
          Effect.annotateLogs({ error: error instanceof Error ? error.message : String(error) })
        )
      return DeploymentStates.of({
        read: (ids) =>
          Effect.tryPromise(async () => {
            const pipeline = redis.pipeline()
            if (ids.length > 0) pipeline.mget(...ids.map((id) => PREFIX + id))
            pipeline.hgetall(DISABLED)
            const results = (await pipeline.exec()) ?? []
            const health = new Map<string, Health>()
            if (ids.length > 0) {
              const [error, values] = results[0] ?? [null, []]
              if (error) throw error
              ;(values as Array<string | null>).forEach((value, index) => {
                const parsed = parse<Health>(value)
                if (parsed !== undefined) health.set(ids[index] as string, parsed)
              })
            }
            const [error, fields] = results[ids.length > 0 ? 1 : 0] ?? [null, {}]
            if (error) throw error
            const disabled = new Map<string, UpstreamDisabled>()
            for (const [name, value] of Object.entries((fields ?? {}) as Record<string, string>)) {
              const parsed = parse<UpstreamDisabled>(value)
              if (parsed !== undefined) disabled.set(name, parsed)
            }
            return { health, disabled }
          }).pipe(Effect.catch((error) => warn("read")(error).pipe(Effect.as(empty)))),
        write: (id, value, ttlMs) =>
          Effect.tryPromise(
            (): Promise<unknown> =>
              value._tag === "Healthy" && value.failures === 0 && value.rateLimits === 0
                ? redis.del(PREFIX + id)
                : redis.set(PREFIX + id, JSON.stringify(value), "PX", Math.max(1, Math.ceil(ttlMs)))
          ).pipe(Effect.asVoid, Effect.catch(warn("write"))),
        setDisabled: (upstream, value) =>
          Effect.tryPromise(
            (): Promise<unknown> =>
              value === undefined
                ? redis.hdel(DISABLED, upstream)
                : redis.hset(DISABLED, upstream, JSON.stringify(value))
          ).pipe(Effect.asVoid, Effect.catch(warn("write")))
      })
    })
  )
