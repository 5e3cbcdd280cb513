/**
 * The steps of routing one call (Deployments.route): pick the deployment for the next attempt, admit it under that
 * deployment's limits, run the attempt on it and learn from its answer, and — once no attempt is left — say why.
 * Each is decided here once; `routeCall` chains them, one attempt after another, with what the call has tried so far.
 */
import { Clock, Effect, Exit } from "effect"
import { bestTier, choose, type RoundRobinCounters } from "../../domain/routing/DeploymentChoice.ts"
import {
  type Availability,
  availability,
  type Health,
  type HealthPolicy,
  healthy,
  type Outcome,
  startTrial
} from "../../domain/routing/DeploymentHealth.ts"
import type { PluginFailure, PluginModel } from "../../plugins/ModelPlugin.ts"
import { pluginFailure } from "../../plugins/ModelPlugin.ts"
import type { UpstreamLimits } from "../config/decodeDeployments.ts"
import type { DeploymentStates } from "../ports/DeploymentStates.ts"
import type { RateLimiter } from "../RateLimiter.ts"
import { atResponseEnd } from "../RequestTelemetry.ts"
import type { Conversation } from "./Affinity.ts"
import { judge, lastErrorOf, ttlOf, untilOf } from "./AttemptRules.ts"
import { admit } from "./DeploymentAdmission.ts"
import type { ConversationTrails } from "./DeploymentStats.ts"
import type { Deployment, RouteHint } from "./Deployments.ts"

/** What the steps share: the routing store, the limits, the policy, and how an answer is learned. */
export interface RoutingContext {
  readonly states: DeploymentStates["Service"]
  readonly limiter: RateLimiter["Service"]
  readonly upstreamLimits: ReadonlyMap<string, UpstreamLimits>
  readonly limits: { readonly maxAttempts: number; readonly retryBudgetMs: number }
  readonly policy: HealthPolicy
  readonly trails: ConversationTrails
  readonly countersOf: (model: string) => RoundRobinCounters
  readonly learn: (deployment: Deployment, before: Health, outcome: Outcome | undefined) => Effect.Effect<void>
  readonly disableForAuth: (deployment: Deployment, failure: PluginFailure) => Effect.Effect<void>
}

/** Where a call stands between attempts. */
interface Tally {
  readonly tried: ReadonlySet<Deployment>
  readonly attempts: number
  /** The last attempt's failure, passed on when no attempt is left. */
  readonly last: PluginFailure | undefined
  /** The soonest a deployment at its limits frees a slot, in seconds, when one was. */
  readonly saturatedFor: number | undefined
}

interface Judged {
  readonly deployment: Deployment
  readonly health: Health
  readonly availability: Availability
}

type Attempted<A> =
  | { readonly _tag: "Answered"; readonly value: A }
  | { readonly _tag: "Failed"; readonly failure: PluginFailure; readonly stop: boolean }

/**
 * The deployment for the next attempt: among those not tried and not disabled, the best tier of the available ones
 * (where the conversation's last turn went, else by affinity or round robin); when none is available, the one that
 * recovers first. Undefined when none is left.
 */
const pick = (
  context: RoutingContext,
  model: string,
  deployments: ReadonlyArray<Deployment>,
  tried: ReadonlySet<Deployment>,
  conversation: Partial<Conversation>,
  now: number
) =>
  Effect.map(context.states.read(deployments.map((deployment) => deployment.id)), (snapshot): Judged | undefined => {
    const judged = deployments
      .filter((deployment) => !tried.has(deployment) && !snapshot.disabled.has(deployment.config.upstream.name))
      .map((deployment) => {
        const health = snapshot.health.get(deployment.id) ?? healthy
        return { deployment, health, availability: availability(health, now, context.policy) }
      })
    if (judged.length === 0) return undefined
    const available = judged.filter((entry) => entry.availability._tag !== "Blocked")
    // Nothing available: the one that recovers first still gets this attempt (see Deployments.ts).
    const pool =
      available.length > 0
        ? available
        : [judged.reduce((best, entry) => (untilOf(entry.availability) < untilOf(best.availability) ? entry : best))]
    const candidates = pool.map((entry) => ({
      ...entry,
      id: entry.deployment.id,
      weight: entry.deployment.weight,
      priority: entry.deployment.priority
    }))
    const { affinity, trail } = conversation
    const previous = affinity === undefined ? context.trails.recall(model, trail, now) : undefined
    return (
      bestTier(candidates).find((candidate) => candidate.id === previous) ??
      choose(candidates, affinity, context.countersOf(model))
    )
  })

/** The deployment's in-flight slot and its admission, given back once, whichever of the call's ends comes first. */
const slotOn = (deployment: Deployment, admissionRelease: Effect.Effect<void>) => {
  deployment.stats.inFlight += 1
  let released = false
  return Effect.suspend(() => {
    if (released) return Effect.void
    released = true
    deployment.stats.inFlight -= 1
    return admissionRelease
  })
}

/**
 * One attempt on the chosen deployment, admitted at `now`: a deployment due for a trial starts it; the answer is
 * recorded in its stats and learned into its health; refused credentials disable its upstream. The slot goes back
 * when the call ends — a stream's when its response has been sent.
 */
const attemptOn = <A, R>(
  context: RoutingContext,
  model: PluginModel,
  hint: RouteHint,
  chosen: Judged,
  admissionRelease: Effect.Effect<void>,
  now: number,
  attempt: (deployment: PluginModel) => Effect.Effect<A, PluginFailure, R>
) =>
  Effect.gen(function* () {
    const { deployment } = chosen
    let health = chosen.health
    if (chosen.availability._tag === "TrialDue") {
      health = startTrial(now)
      yield* context.states.write(deployment.id, health, ttlOf(health, now, context.policy))
    }
    const release = slotOn(deployment, admissionRelease)
    const narrowed = {
      ...model,
      upstreams: [deployment.config.upstream],
      upstreamModel: deployment.config.upstreamModel
    }
    const exit = yield* Effect.exit(attempt(narrowed).pipe(Effect.onInterrupt(() => release)))
    const latency = (yield* Clock.currentTimeMillis) - now
    if (Exit.isSuccess(exit)) {
      deployment.stats.record("success", latency)
      yield* context.learn(deployment, health, { _tag: "Succeeded" })
      yield* hint.streamed === true ? atResponseEnd(release) : release
      return { _tag: "Answered", value: exit.value } as Attempted<A>
    }
    yield* release
    const failure = Exit.findErrorOption(exit)
    if (failure._tag === "None") return yield* Effect.failCause(exit.cause)
    const verdict = judge(failure.value)
    deployment.stats.record(verdict.kind, latency)
    if (verdict.kind !== "rejected" && verdict.kind !== "cancelled") {
      deployment.stats.lastError = { at: now, message: lastErrorOf(failure.value) }
    }
    if (verdict.kind === "auth") yield* context.disableForAuth(deployment, failure.value)
    yield* context.learn(deployment, health, verdict.outcome)
    return { _tag: "Failed", failure: failure.value, stop: verdict.next === "stop" } as Attempted<A>
  })

/** No attempt left: the last attempt's failure; else every deployment at its limits; else every upstream disabled. */
const giveUp = (model: string, tally: Tally) => {
  if (tally.last !== undefined) return Effect.fail(tally.last)
  if (tally.saturatedFor !== undefined) {
    return Effect.fail(
      pluginFailure("rate_limited", `every deployment of model ${model} is at its configured limits`, {
        retryAfterSeconds: tally.saturatedFor,
        code: "deployments_saturated"
      })
    )
  }
  // Nothing can be called at all: a 503 (the reason whose status says "not now"), not a 502 blaming a vendor.
  const disabled = `every upstream of model ${model} is disabled; the operator must enable one`
  return Effect.fail(pluginFailure("overloaded", disabled, { code: "upstreams_disabled" }))
}

/**
 * Runs `attempt` on `deployments` in routing order: picked, admitted (a deployment at its limits is passed over for
 * the next), attempted; a failure another deployment might not repeat moves on, within `maxAttempts` attempts and
 * `retryBudgetMs` from the first.
 */
export const routeCall = <A, R>(
  context: RoutingContext,
  model: PluginModel,
  deployments: ReadonlyArray<Deployment>,
  hint: RouteHint,
  attempt: (deployment: PluginModel) => Effect.Effect<A, PluginFailure, R>
): Effect.Effect<A, PluginFailure, R> =>
  Effect.gen(function* () {
    const started = yield* Clock.currentTimeMillis
    const conversation: Partial<Conversation> = (deployments.length > 1 ? hint.conversation?.() : undefined) ?? {}
    const next = (tally: Tally): Effect.Effect<A, PluginFailure, R> =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const spent = tally.attempts > 0 && now - started >= context.limits.retryBudgetMs
        if (tally.attempts >= context.limits.maxAttempts || spent) return yield* giveUp(model.id, tally)
        const chosen = yield* pick(context, model.id, deployments, tally.tried, conversation, now)
        if (chosen === undefined) return yield* giveUp(model.id, tally)
        const tried = new Set(tally.tried).add(chosen.deployment)
        const admission = yield* admit(context.limiter, context.upstreamLimits, chosen.deployment, hint)
        if ("refused" in admission) {
          const saturatedFor = Math.min(tally.saturatedFor ?? Number.POSITIVE_INFINITY, admission.refused ?? 1)
          return yield* next({ ...tally, tried, saturatedFor })
        }
        const attempted = yield* attemptOn(context, model, hint, chosen, admission.release, now, attempt)
        if (attempted._tag === "Answered") {
          context.trails.remember(model.id, conversation.trail, chosen.deployment.id, now)
          return attempted.value
        }
        const after = { ...tally, tried, attempts: tally.attempts + 1, last: attempted.failure }
        if (attempted.stop || after.attempts >= context.limits.maxAttempts) return yield* giveUp(model.id, after)
        yield* Effect.logWarning("upstream failed before the first byte; trying another deployment").pipe(
          Effect.annotateLogs({ deployment: chosen.deployment.id, model: model.id, reason: attempted.failure.reason })
        )
        return yield* next(after)
      })
    return yield* next({ tried: new Set(), attempts: 0, last: undefined, saturatedFor: undefined })
  })
