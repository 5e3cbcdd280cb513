/**
 * Deployment health shared by every instance through Redis (`REDIS_URL`): one key per deployment that is not
 * plainly healthy (JSON, expiring when its state stops meaning anything) and one hash of disabled upstreams. A read
 * is one round trip (MGET and HGETALL pipelined). Every write is also kept in this instance's own state
 * (InProcessDeploymentStates.ts), which a read falls back to while Redis cannot be reached: an upstream this instance
 * disabled stays disabled here even when Redis never heard of it. A disable or enable Redis missed is written there
 * before the next read that reaches it, so the other instances learn it once Redis is back.
 */
import { Effect, Layer, type Redacted } from "effect"
import type { Health } from "../../domain/routing/DeploymentHealth.ts"
import { acquireRedis } from "../redis/RedisConnection.ts"
import { DeploymentStates, type UpstreamDisabled } from "../../app/ports/DeploymentStates.ts"
import * as InProcessDeploymentStates from "./InProcessDeploymentStates.ts"

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
      const own = InProcessDeploymentStates.make()
      /** Disables (and enables: undefined) that Redis has not taken yet, by upstream. */
      const unshared = new Map<string, UpstreamDisabled | undefined>()
      const warn = (what: string) => (error: unknown) =>
        Effect.logWarning(`deployment states: Redis ${what} failed; routing on this instance's own state`).pipe(
          Effect.annotateLogs({ error: error instanceof Error ? error.message : String(error) })
        )
      const share = async (upstream: string, value: UpstreamDisabled | undefined) => {
        if (value === undefined) await redis.hdel(DISABLED, upstream)
        else await redis.hset(DISABLED, upstream, JSON.stringify(value))
      }
      return DeploymentStates.of({
        read: (ids) =>
          Effect.tryPromise(async () => {
            for (const [upstream, value] of unshared) {
              await share(upstream, value)
              unshared.delete(upstream)
            }
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
          }).pipe(Effect.catch((error) => warn("read")(error).pipe(Effect.andThen(own.read(ids))))),
        write: (id, value, ttlMs) =>
          own
            .write(id, value, ttlMs)
            .pipe(
              Effect.andThen(
                Effect.tryPromise(
                  (): Promise<unknown> =>
                    value._tag === "Healthy" && value.failures === 0 && value.rateLimits === 0
                      ? redis.del(PREFIX + id)
                      : redis.set(PREFIX + id, JSON.stringify(value), "PX", Math.max(1, Math.ceil(ttlMs)))
                )
              ),
              Effect.asVoid,
              Effect.catch(warn("write"))
            ),
        setDisabled: (upstream, value) =>
          own.setDisabled(upstream, value).pipe(
            Effect.andThen(Effect.tryPromise(() => share(upstream, value))),
            Effect.map(() => {
              unshared.delete(upstream)
              return "shared" as const
            }),
            Effect.catch((error) =>
              Effect.sync(() => unshared.set(upstream, value)).pipe(
                Effect.andThen(warn("write")(error)),
                Effect.as("local" as const)
              )
            )
          )
      })
    })
  )
