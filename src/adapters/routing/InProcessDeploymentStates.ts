/**
 * Deployment health kept in this process: one instance's own view, the default without `REDIS_URL`, and what the
 * Redis adapter falls back to while Redis cannot be reached.
 */
import { Clock, Effect, Layer } from "effect"
import type { Health } from "../../domain/routing/DeploymentHealth.ts"
import { DeploymentStates, type UpstreamDisabled } from "../../app/ports/DeploymentStates.ts"

export const make = (): DeploymentStates["Service"] => {
  const health = new Map<string, { readonly health: Health; readonly expires: number }>()
  const disabled = new Map<string, UpstreamDisabled>()
  const none: ReadonlyMap<string, Health> = new Map()
  return DeploymentStates.of({
    read: (ids) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (health.size === 0) return { health: none, disabled }
        const found = new Map<string, Health>()
        for (const id of ids) {
          const entry = health.get(id)
          if (entry === undefined) continue
          if (entry.expires <= now) health.delete(id)
          else found.set(id, entry.health)
        }
        return { health: found, disabled }
      }),
    write: (id, value, ttlMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (value._tag === "Healthy" && value.failures === 0 && value.rateLimits === 0) health.delete(id)
        else health.set(id, { health: value, expires: now + ttlMs })
      }),
    setDisabled: (upstream, value) =>
      Effect.sync(() => {
        if (value === undefined) disabled.delete(upstream)
        else disabled.set(upstream, value)
        // Every instance there is (this one) sees it.
        return "shared" as const
      })
  })
}

export const layer: Layer.Layer<DeploymentStates> = Layer.sync(DeploymentStates, make)
