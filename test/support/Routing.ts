/** Routing for tests that build a gateway service by hand: the real `Deployments` over in-process state. */
import { Layer } from "effect"
import * as InProcessRateLimiter from "../../src/adapters/ratelimit/InProcessRateLimiter.ts"
import * as InProcessDeploymentStates from "../../src/adapters/routing/InProcessDeploymentStates.ts"
import * as PgAlertStore from "../../src/adapters/store/PgAlertStore.ts"
import { Alerts } from "../../src/app/alerts/Alerts.ts"
import { OperatorConfig, type OperatorConfigData } from "../../src/app/OperatorConfig.ts"
import type { DeploymentStates } from "../../src/app/ports/DeploymentStates.ts"
import { Deployments } from "../../src/app/routing/Deployments.ts"
import { noRateLimits } from "../../src/domain/keys/RateLimits.ts"

/**
 * `Deployments` for `config`'s models (a model it does not list is called as given); alerts on the test's database;
 * deployment states in process unless `states` says where.
 */
export const routingLayer = (
  config: Partial<OperatorConfigData> = {},
  states: Layer.Layer<DeploymentStates> = InProcessDeploymentStates.layer
) => {
  const operator = Layer.succeed(
    OperatorConfig,
    OperatorConfig.of({
      upstreams: new Map(),
      models: [],
      plugins: [],
      ledger: { holdTtlSeconds: 900 },
      rateLimits: noRateLimits,
      video: { pollIntervalMs: 5000, deadlineMinutes: 30, retentionDays: 7 },
      ...config
    })
  )
  return Deployments.layer.pipe(
    Layer.provide(
      Layer.mergeAll(
        states,
        InProcessRateLimiter.layer(noRateLimits),
        operator,
        Alerts.layer.pipe(Layer.provide(PgAlertStore.layer), Layer.provide(operator))
      )
    )
  )
}
