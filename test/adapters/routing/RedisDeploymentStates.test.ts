/**
 * Deployment states with `REDIS_URL` set but Redis unreachable: an upstream that refuses the gateway's credentials is
 * disabled in this instance's own state (it takes no more traffic here), and the log says that only this instance
 * knows, rather than claiming a disable every instance honours.
 */
import { memoryPglite } from "../../support/PgliteTemplate.ts"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Logger, Redacted } from "effect"
import * as RedisDeploymentStates from "../../../src/adapters/routing/RedisDeploymentStates.ts"
import type { ModelConfig, UpstreamConfig } from "../../../src/app/config/OperatorConfigData.ts"
import type { ModelPricing } from "../../../src/app/config/ModelPricing.ts"
import { DeploymentStates } from "../../../src/app/ports/DeploymentStates.ts"
import { Deployments } from "../../../src/app/routing/Deployments.ts"
import { pluginFailure } from "../../../src/plugins/ModelPlugin.ts"
import { routingLayer } from "../../support/Routing.ts"
import * as Database from "../../../src/adapters/store/Database.ts"

/** Port 1 on loopback: nothing listens there, so every Redis command fails at once. */
const unreachable = RedisDeploymentStates.layer(Redacted.make("redis://127.0.0.1:1"))

const upstream: UpstreamConfig = {
  name: "wrongkey",
  protocol: "openai",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: Redacted.make("sk-not-the-key"),
  timeoutMs: 1000,
  idleTimeoutMs: 1000,
  maxConnections: 1
}
const model: ModelConfig = {
  id: "keyed",
  plugin: "text",
  upstreams: [upstream],
  upstreamModel: "m-w",
  pricing: {} as ModelPricing,
  maxOutputTokens: 100
}

const logged: Array<string> = []
const recording = Logger.layer([Logger.make((options) => logged.push(String(options.message)))], {
  mergeWithExisting: true
})

const services = Layer.mergeAll(
  routingLayer({ upstreams: new Map([[upstream.name, upstream]]), models: [model] }, unreachable),
  unreachable
).pipe(Layer.provideMerge(Database.layer(memoryPglite())), Layer.provideMerge(recording))

layer(services, { timeout: "60 seconds" })("deployment states with Redis unreachable", (it) => {
  it.effect("a disable is kept in the instance's own state, reported as local", () =>
    Effect.gen(function* () {
      const states = yield* DeploymentStates
      const reach = yield* states.setDisabled("elsewhere", { reason: "operator", at: 0, message: "off" })
      assert.strictEqual(reach, "local")
      assert.strictEqual((yield* states.read([])).disabled.get("elsewhere")?.reason, "operator")
      assert.strictEqual(yield* states.setDisabled("elsewhere", undefined), "local")
      assert.isFalse((yield* states.read([])).disabled.has("elsewhere"))
    })
  )

  it.effect("an upstream refused with 401 takes no further attempt, and the log says only this instance knows", () =>
    Effect.gen(function* () {
      const deployments = yield* Deployments
      let attempts = 0
      const refused = () => {
        attempts += 1
        return Effect.fail(pluginFailure("misconfigured", "credentials refused", { upstreamStatus: 401 }))
      }
      const plugin = { ...model, maxOutputTokens: 100, pricing: {} }
      for (let index = 0; index < 3; index++) {
        yield* Effect.flip(deployments.route(plugin, {}, refused))
      }
      assert.strictEqual(attempts, 1, "one 401, then never again")
      const last = yield* Effect.flip(deployments.route(plugin, {}, refused))
      assert.strictEqual(last.code, "upstreams_disabled")
      const disabledLine = logged.find((line) => line.includes("UPSTREAM DISABLED"))
      assert.isDefined(disabledLine)
      assert.include(disabledLine, "ONLY THIS INSTANCE")
      const status = yield* deployments.status
      assert.strictEqual(status.find((entry) => entry.name === "wrongkey")?.disabled?.reason, "auth")
    })
  )
})
