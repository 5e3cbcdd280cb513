/** How `GET /admin/upstreams`, the console and `/metrics` show each upstream and its deployments. */
import { availability, type Health, type HealthPolicy, healthy } from "../../domain/routing/DeploymentHealth.ts"
import type { UpstreamConfig } from "../config/OperatorConfigData.ts"
import type { DeploymentSnapshot } from "../ports/DeploymentStates.ts"
import type { OutcomeKind } from "./DeploymentStats.ts"
import type { Deployment } from "./Deployments.ts"

/** `half_open`: the circuit's time is over and the next request is its trial (or the trial is in flight). */
export type DeploymentState = "healthy" | "cooling" | "open" | "half_open" | "disabled"

export interface DeploymentStatus {
  readonly id: string
  readonly model: string
  readonly upstream: string
  readonly upstreamModel: string
  readonly weight: number
  readonly priority: number
  readonly maxConcurrency: number | null
  readonly rpm: number | null
  readonly tpm: number | null
  readonly state: DeploymentState
  /** When a cooldown or an open circuit ends (ISO 8601), else null. */
  readonly until: string | null
  /** Failures in a row so far (the circuit opens at `routing.failureThreshold`). */
  readonly failuresInARow: number
  /** This instance's view from here on. */
  readonly inFlight: number
  readonly requests: Readonly<Record<OutcomeKind | "total", number>>
  /** Rate limits, failures and refused credentials among the last 200 outcomes, 0 to 1. */
  readonly errorRate: number
  /** Time to the first byte over the last 200 answers. */
  readonly latencyMs: { readonly p50: number | null; readonly p99: number | null }
  readonly lastError: { readonly at: string; readonly message: string } | null
}

export interface UpstreamStatus {
  readonly name: string
  readonly protocol: string
  readonly state: "enabled" | "disabled"
  readonly disabled: { readonly reason: "auth" | "operator"; readonly at: string; readonly message: string } | null
  readonly deployments: ReadonlyArray<DeploymentStatus>
}

const stateOf = (health: Health, now: number, policy: HealthPolicy): Pick<DeploymentStatus, "state" | "until"> => {
  const now_ = availability(health, now, policy)
  if (now_._tag === "Available") return { state: "healthy", until: null }
  if (now_._tag === "TrialDue") return { state: "half_open", until: null }
  return {
    state: now_.why === "cooling" ? "cooling" : now_.why === "open" ? "open" : "half_open",
    until: new Date(now_.until).toISOString()
  }
}

export const statusOf = (
  upstreams: ReadonlyMap<string, UpstreamConfig>,
  deployments: ReadonlyArray<Deployment>,
  snapshot: DeploymentSnapshot,
  now: number,
  policy: HealthPolicy
): ReadonlyArray<UpstreamStatus> =>
  [...upstreams.values()].map((upstream) => {
    const disabled = snapshot.disabled.get(upstream.name)
    return {
      name: upstream.name,
      protocol: upstream.protocol,
      state: disabled === undefined ? "enabled" : "disabled",
      disabled:
        disabled === undefined
          ? null
          : { reason: disabled.reason, at: new Date(disabled.at).toISOString(), message: disabled.message },
      deployments: deployments
        .filter((deployment) => deployment.config.upstream.name === upstream.name)
        .map((deployment): DeploymentStatus => {
          const health = snapshot.health.get(deployment.id) ?? healthy
          const { stats, config } = deployment
          const state =
            disabled === undefined ? stateOf(health, now, policy) : { state: "disabled" as const, until: null }
          const total = Object.values(stats.totals).reduce((sum, count) => sum + count, 0)
          return {
            id: deployment.id,
            model: deployment.model,
            upstream: upstream.name,
            upstreamModel: config.upstreamModel,
            weight: config.weight,
            priority: config.priority,
            maxConcurrency: config.maxConcurrency,
            rpm: config.rpm,
            tpm: config.tpm,
            ...state,
            failuresInARow:
              health._tag === "Healthy" || health._tag === "Cooling" ? health.failures : policy.failureThreshold,
            inFlight: stats.inFlight,
            requests: { ...stats.totals, total },
            errorRate: Math.round(stats.errorRate() * 1000) / 1000,
            latencyMs: { p50: stats.latency(0.5), p99: stats.latency(0.99) },
            lastError:
              stats.lastError === undefined
                ? null
                : { at: new Date(stats.lastError.at).toISOString(), message: stats.lastError.message }
          }
        })
    }
  })

/**
 * The upstreams' status without the deployments of models routing never serves (video tasks keep to their own
 * dispatch, docs/deployments.md): they would only ever show as healthy and idle.
 */
export const routedOnly = (
  upstreams: ReadonlyArray<UpstreamStatus>,
  isRouted: (model: string) => boolean
): ReadonlyArray<UpstreamStatus> =>
  upstreams.map((upstream) => ({
    ...upstream,
    deployments: upstream.deployments.filter((deployment) => isRouted(deployment.model))
  }))
