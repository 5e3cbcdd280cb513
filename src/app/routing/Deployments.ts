/**
 * Routing: which of a model's deployments takes each attempt of a call, and what each answer teaches about the
 * deployment. Every family goes through `route`, so spreading by weight, priority tiers, cooldowns, circuits,
 * disabled upstreams, per-deployment limits and the retry budget are decided here once, not in each plugin; a
 * plugin sees a model narrowed to the one deployment it is to call.
 *
 * An attempt that fails before the first byte in a way another deployment might not (a rate limit, a 5xx, a
 * timeout, refused credentials) moves on to another deployment, never to one this request already tried, within
 * `routing.maxAttempts` and `routing.retryBudgetMs`. What an attempt teaches goes through the pure decider
 * (domain/routing/DeploymentHealth.ts) into `DeploymentStates`, in process or in Redis. A cooling or open
 * deployment takes no attempt while another is available; when none is, the attempt goes to the one that recovers
 * first, because shutting a model off entirely is the vendor's to decide (its answer is passed on). A disabled
 * upstream (refused credentials, or an operator) takes nothing until it is enabled.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { PluginFailure, PluginModel } from "../../plugins/ModelPlugin.ts"
import {
  type Health,
  type HealthPolicy,
  healthy,
  observe,
  type Outcome
} from "../../domain/routing/DeploymentHealth.ts"
import type { RoundRobinCounters } from "../../domain/routing/DeploymentChoice.ts"
import { RoutingDefaults } from "../config/decodeDeployments.ts"
import { deploymentsOf, ttlOf } from "./AttemptRules.ts"
import type { DeploymentConfig } from "../config/OperatorConfigData.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { DeploymentStates, type StateReach, type UpstreamDisabled } from "../ports/DeploymentStates.ts"
import { RateLimiter } from "../RateLimiter.ts"
import { type RoutingContext, routeCall } from "./RouteAttempts.ts"
import type { Conversation } from "./Affinity.ts"
import { Alerts } from "../alerts/Alerts.ts"
import { ConversationTrails, DeploymentStats } from "./DeploymentStats.ts"
import { type DeploymentStatus, statusOf, type UpstreamStatus } from "./DeploymentStatus.ts"

const reachText = (reach: StateReach) =>
  reach === "shared"
    ? "every instance sees this;"
    : "ONLY THIS INSTANCE sees this: the shared routing store (Redis) could not be written, and other instances learn it once it can;"

/** What the caller knows about a call that routing can use. */
export interface RouteHint {
  /**
   * The call's conversation, worked out only when the model has a choice of deployments (it digests the prompt):
   * - `affinity` keeps it on one deployment while that stays available (see `affinityKey`); absent: round robin;
   * - `trail` (Affinity.ts) sends a next turn where its previous turn went, while available.
   */
  readonly conversation?: (() => Conversation) | undefined
  /** The most tokens the call can use, counted against `tpm` limits when it is admitted. */
  readonly tokens?: number | undefined
  /** Keep the deployment's in-flight slot until the response has been sent (a stream), not just until it starts. */
  readonly streamed?: boolean | undefined
  /**
   * A batch line's call: it may take only this percent of each deployment's and upstream's `maxConcurrency`, so
   * interactive calls keep the rest (app/batch/BatchWorker.ts); past it the deployment counts as saturated.
   */
  readonly batchSharePercent?: number | undefined
}

/** One deployment of one model, as routing keeps it. */
export interface Deployment {
  /** `upstream/upstreamModel`: what health is kept under (two models on the same vendor model share it). */
  readonly id: string
  readonly model: string
  readonly config: DeploymentConfig
  readonly weight: number
  readonly priority: number
  readonly stats: DeploymentStats
}

export type { DeploymentStatus, UpstreamStatus }

export class Deployments extends Context.Service<
  Deployments,
  {
    /**
     * Runs `attempt` on the model's deployments in routing order until one succeeds, or fails in a way no other
     * deployment would help with, or the request's budget is spent; learns each deployment's health on the way.
     */
    readonly route: <A, R>(
      model: PluginModel,
      hint: RouteHint,
      attempt: (deployment: PluginModel) => Effect.Effect<A, PluginFailure, R>
    ) => Effect.Effect<A, PluginFailure, R>
    /** Every upstream with its deployments' state, for the admin API, the console and metrics. */
    readonly status: Effect.Effect<ReadonlyArray<UpstreamStatus>>
    /** Disables an upstream (`enabled: false`) or enables it again; false when no upstream has that name. */
    readonly setEnabled: (upstream: string, enabled: boolean) => Effect.Effect<boolean>
  }
>()("tollgate/app/routing/Deployments") {
  static readonly layer = Layer.effect(
    Deployments,
    Effect.gen(function* () {
      const config = yield* OperatorConfig
      const states = yield* DeploymentStates
      const limiter = yield* RateLimiter
      const alerts = yield* Alerts
      const routing = config.routing ?? RoutingDefaults
      const policy: HealthPolicy = {
        failureThreshold: routing.failureThreshold,
        openMs: routing.circuitOpenSeconds * 1000,
        cooldownMs: routing.cooldownSeconds * 1000,
        maxCooldownMs: routing.maxCooldownSeconds * 1000
      }
      const byModel = new Map<string, ReadonlyArray<Deployment>>()
      for (const model of config.models) {
        byModel.set(
          model.id,
          deploymentsOf(model).map((deployment) => ({
            id: `${deployment.upstream.name}/${deployment.upstreamModel}`,
            model: model.id,
            config: deployment,
            weight: deployment.weight,
            priority: deployment.priority,
            stats: new DeploymentStats()
          }))
        )
      }
      const counters = new Map<string, RoundRobinCounters>()
      const countersOf = (model: string) => {
        let found = counters.get(model)
        if (found === undefined) {
          found = new Map()
          counters.set(model, found)
        }
        return found
      }
      const upstreamLimits = config.upstreamLimits ?? new Map()
      const trails = new ConversationTrails()

      const learn = (deployment: Deployment, before: Health, outcome: Outcome | undefined) =>
        Effect.gen(function* () {
          if (outcome === undefined) return
          const now = yield* Clock.currentTimeMillis
          const after = observe(before, outcome, now, policy)
          const unchanged =
            after === before ||
            (after === healthy && before._tag === "Healthy" && before.failures === 0 && before.rateLimits === 0)
          if (unchanged) return
          yield* states.write(deployment.id, after, ttlOf(after, now, policy))
          if (after._tag === "Open" && before._tag !== "Open") {
            yield* Effect.logWarning("deployment circuit opened: it takes no traffic until a trial succeeds").pipe(
              Effect.annotateLogs({
                deployment: deployment.id,
                model: deployment.model,
                openSeconds: routing.circuitOpenSeconds
              })
            )
          }
        })

      const disableForAuth = (deployment: Deployment, failure: PluginFailure) =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          const upstream = deployment.config.upstream.name
          const disabled: UpstreamDisabled = {
            reason: "auth",
            at: now,
            message: `the vendor refused the gateway's credentials (HTTP ${failure.upstreamStatus})`
          }
          const reach = yield* states.setDisabled(upstream, disabled)
          // Instances that meet the same refusal within a minute raise one alert between them.
          yield* alerts.raise({
            key: `deployment.disabled:${upstream}:${Math.floor(now / 60_000)}`,
            type: "deployment.disabled",
            accountId: null,
            data: {
              upstream,
              model: deployment.model,
              reason: "auth",
              status: failure.upstreamStatus ?? null,
              message: disabled.message
            }
          })
          yield* Effect.logError(
            `UPSTREAM DISABLED: ${upstream} refused the gateway's credentials (HTTP ${failure.upstreamStatus}); ${reachText(reach)} it takes no traffic until an operator fixes its key and enables it (POST /admin/upstreams/${upstream}/enable)`
          ).pipe(Effect.annotateLogs({ upstream, model: deployment.model, reach }))
        })

      const context: RoutingContext = {
        states,
        limiter,
        upstreamLimits,
        limits: routing,
        policy,
        trails,
        countersOf,
        learn,
        disableForAuth
      }
      const route = <A, R>(
        model: PluginModel,
        hint: RouteHint,
        attempt: (deployment: PluginModel) => Effect.Effect<A, PluginFailure, R>
      ): Effect.Effect<A, PluginFailure, R> => {
        const deployments = byModel.get(model.id)
        return deployments === undefined || deployments.length === 0
          ? attempt(model)
          : routeCall(context, model, deployments, hint, attempt)
      }

      const status = Effect.gen(function* () {
        const all = [...byModel.values()].flat()
        const snapshot = yield* states.read([...new Set(all.map((deployment) => deployment.id))])
        const now = yield* Clock.currentTimeMillis
        return statusOf(config.upstreams, all, snapshot, now, policy)
      })

      const setEnabled = (upstream: string, enabled: boolean) =>
        Effect.gen(function* () {
          if (!config.upstreams.has(upstream)) return false
          const now = yield* Clock.currentTimeMillis
          const reach = yield* states.setDisabled(
            upstream,
            enabled ? undefined : { reason: "operator", at: now, message: "disabled by an operator" }
          )
          yield* Effect.logWarning(
            `upstream ${enabled ? "enabled" : "disabled"} by an operator; ${reachText(reach)}`
          ).pipe(Effect.annotateLogs({ upstream, reach }))
          return true
        })

      return Deployments.of({ route, status, setEnabled })
    })
  )
}
