/**
 * What one deployment's recent answers say about calling it now: the pure decider behind routing. `observe` folds
 * one attempt's outcome into a deployment's health, `availability` says whether a request may go there at `now`.
 * The clock is always an argument, so the same history gives the same answer here, in tests and on another
 * instance reading the state from Redis.
 *
 * Invariants (property-tested in test/domain/routing/DeploymentHealth.test.ts):
 * 1. A success leaves the deployment available, whatever came before.
 * 2. A rate limit with `retry-after` R keeps the deployment out of rotation for exactly R: blocked before
 *    `now + R`, available from then on. Without one, the cooldown backs off from `cooldownMs`, doubling with each
 *    rate limit in a row, never above `maxCooldownMs`.
 * 3. The circuit opens on the `failureThreshold`-th failure in a row and never before; a success in between starts
 *    the count again. An open circuit is blocked for `openMs`.
 * 4. Once an open circuit's time has passed, it admits one trial request; others stay away until the trial's answer
 *    closes the circuit (success) or opens it again (failure), or until `openMs` passes with no answer (the trial's
 *    request is gone) and a new trial is admitted.
 * 5. With no new outcome, availability only improves with time: once available, a deployment stays available.
 */

/** How a deployment's health reacts; from the operator config's `routing:`. */
export interface HealthPolicy {
  /** Failures in a row (5xx, timeouts, unreachable) that open the circuit. */
  readonly failureThreshold: number
  /** How long an open circuit keeps requests away before a trial. */
  readonly openMs: number
  /** The first cooldown after a rate limit that named no `retry-after`. */
  readonly cooldownMs: number
  readonly maxCooldownMs: number
}

export type Health =
  /** Taking traffic; `failures` and `rateLimits` count the failures and rate limits in a row so far. */
  | { readonly _tag: "Healthy"; readonly failures: number; readonly rateLimits: number }
  /** Rate limited: out of rotation until `until` (epoch ms). */
  | { readonly _tag: "Cooling"; readonly until: number; readonly failures: number; readonly rateLimits: number }
  /** The circuit is open until `until`; then one trial may go. */
  | { readonly _tag: "Open"; readonly until: number }
  /** One trial request is in flight since `since`. */
  | { readonly _tag: "Trial"; readonly since: number }

export const healthy: Health = { _tag: "Healthy", failures: 0, rateLimits: 0 }

/** One attempt's outcome, as far as the deployment's health is concerned. */
export type Outcome =
  | { readonly _tag: "Succeeded" }
  | { readonly _tag: "RateLimited"; readonly retryAfterMs: number | undefined }
  /** A 5xx, an overload, a timeout, an unreachable host. */
  | { readonly _tag: "Failed" }

export type Availability =
  | { readonly _tag: "Available" }
  /** The circuit's time is over: the next request to pick it is its trial (see `startTrial`). */
  | { readonly _tag: "TrialDue" }
  | { readonly _tag: "Blocked"; readonly until: number; readonly why: "cooling" | "open" | "trial" }

export const availability = (health: Health, now: number, policy: HealthPolicy): Availability => {
  switch (health._tag) {
    case "Healthy":
      return { _tag: "Available" }
    case "Cooling":
      return now >= health.until ? { _tag: "Available" } : { _tag: "Blocked", until: health.until, why: "cooling" }
    case "Open":
      return now >= health.until ? { _tag: "TrialDue" } : { _tag: "Blocked", until: health.until, why: "open" }
    case "Trial": {
      // A trial whose request vanished without an answer must not keep the circuit shut forever.
      const until = health.since + policy.openMs
      return now >= until ? { _tag: "TrialDue" } : { _tag: "Blocked", until, why: "trial" }
    }
  }
}

/** The health once a request was sent as the trial of a circuit whose time is over. */
export const startTrial = (now: number): Health => ({ _tag: "Trial", since: now })

const cooldownFor = (rateLimitsInARow: number, policy: HealthPolicy): number =>
  Math.min(policy.maxCooldownMs, policy.cooldownMs * 2 ** Math.min(rateLimitsInARow, 30))

export const observe = (health: Health, outcome: Outcome, now: number, policy: HealthPolicy): Health => {
  if (outcome._tag === "Succeeded") return healthy
  // A cooldown that has run out counts as healthy again, keeping its counts in a row.
  const counts =
    health._tag === "Healthy" || health._tag === "Cooling"
      ? { failures: health.failures, rateLimits: health.rateLimits }
      : { failures: policy.failureThreshold - 1, rateLimits: 0 }
  if (outcome._tag === "RateLimited") {
    const wait = outcome.retryAfterMs ?? cooldownFor(counts.rateLimits, policy)
    return {
      _tag: "Cooling",
      until: now + Math.max(0, wait),
      failures: counts.failures,
      rateLimits: counts.rateLimits + 1
    }
  }
  // A failed trial, or a failure while the circuit is open (a last-resort call), opens it again for a full period.
  const failures = counts.failures + 1
  if (failures >= policy.failureThreshold) return { _tag: "Open", until: now + policy.openMs }
  if (health._tag === "Cooling" && now < health.until) return { ...health, failures }
  return { _tag: "Healthy", failures, rateLimits: counts.rateLimits }
}
