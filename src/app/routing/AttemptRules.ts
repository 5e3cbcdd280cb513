/**
 * The rules routing applies around each attempt, apart from the service's state: which deployments a model has,
 * what a failed attempt says (about the deployment, and about trying another), and how long a health state is kept.
 */
import { type PluginFailure, refusedCredentials } from "../../plugins/ModelPlugin.ts"
import type { Availability, Health, HealthPolicy, Outcome } from "../../domain/routing/DeploymentHealth.ts"
import type { DeploymentConfig } from "../config/OperatorConfigData.ts"
import type { OutcomeKind } from "./DeploymentStats.ts"

/** The deployments a model's config names; a model without a `deployments` list falls back in `upstreams` order. */
export const deploymentsOf = (model: {
  readonly upstreams: ReadonlyArray<DeploymentConfig["upstream"]>
  readonly upstreamModel: string
  readonly deployments?: ReadonlyArray<DeploymentConfig> | undefined
}): ReadonlyArray<DeploymentConfig> =>
  model.deployments ??
  model.upstreams.map((upstream, index) => ({
    upstream,
    upstreamModel: model.upstreamModel,
    weight: 1,
    priority: index,
    maxConcurrency: null,
    rpm: null,
    tpm: null
  }))

type Verdict = "retry" | "stop"

/** What a failed attempt says about its deployment, and whether another deployment is worth trying. */
export const judge = (
  failure: PluginFailure
): { readonly kind: OutcomeKind; readonly outcome?: Outcome; readonly next: Verdict } => {
  if (failure.upstreamStatus !== undefined && refusedCredentials(failure.upstreamStatus, failure.detail)) {
    return { kind: "auth", next: "retry" }
  }
  switch (failure.reason) {
    case "rate_limited":
      return { kind: "rate_limited", outcome: rateLimited(failure), next: "retry" }
    case "overloaded":
      return {
        kind: "failed",
        outcome: failure.retryAfterSeconds === undefined ? { _tag: "Failed" } : rateLimited(failure),
        next: "retry"
      }
    case "unavailable":
    case "timeout":
      return { kind: "failed", outcome: { _tag: "Failed" }, next: "retry" }
    case "misconfigured":
      return { kind: "failed", next: "retry" }
    case "cancelled":
      return { kind: "cancelled", next: "stop" }
    default:
      // The deployment answered; the request itself was refused or named something unknown.
      return { kind: "rejected", outcome: { _tag: "Succeeded" }, next: "stop" }
  }
}

/**
 * A failed attempt as the operator's status shows it: the reason, the gateway's code and the vendor's HTTP status,
 * never the failure's message, which can quote the vendor's error body (its account ids, request ids, key prefixes).
 */
export const lastErrorOf = (failure: PluginFailure): string =>
  [
    failure.reason,
    ...(failure.code === undefined ? [] : [failure.code]),
    ...(failure.upstreamStatus === undefined ? [] : [`upstream HTTP ${failure.upstreamStatus}`])
  ].join(", ")

const rateLimited = (failure: PluginFailure): Outcome => ({
  _tag: "RateLimited",
  retryAfterMs: failure.retryAfterSeconds === undefined ? undefined : Math.ceil(failure.retryAfterSeconds * 1000)
})

/** How long a health state means anything in the store (a healthy one with nothing in a row needs no entry). */
export const ttlOf = (health: Health, now: number, policy: HealthPolicy): number => {
  switch (health._tag) {
    case "Healthy":
      return 10 * 60_000
    case "Cooling":
      return Math.max(1, health.until - now) + 10 * 60_000
    case "Open":
      return Math.max(1, health.until - now) + 2 * policy.openMs
    case "Trial":
      return 2 * policy.openMs
  }
}

/** When a blocked deployment becomes available again (for picking the one that recovers first). */
export const untilOf = (value: Availability): number =>
  value._tag === "Blocked" ? value.until : Number.NEGATIVE_INFINITY
