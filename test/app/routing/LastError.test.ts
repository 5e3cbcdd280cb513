/**
 * A deployment's `lastError` (the admin API's and the console's upstream status) says what failed in the gateway's
 * own words: the reason, the code and the vendor's HTTP status. The vendor's error text stays out of it: it can carry
 * the vendor's account and request ids, or part of a key it refused.
 */
import { memoryPglite } from "../../support/PgliteTemplate.ts"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import * as Database from "../../../src/adapters/store/Database.ts"
import type { ModelPricing } from "../../../src/app/config/ModelPricing.ts"
import type { ModelConfig, UpstreamConfig } from "../../../src/app/config/OperatorConfigData.ts"
import { Deployments } from "../../../src/app/routing/Deployments.ts"
import { pluginFailure } from "../../../src/plugins/ModelPlugin.ts"
import { routingLayer } from "../../support/Routing.ts"

const upstream: UpstreamConfig = {
  name: "vendor",
  protocol: "openai",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: Redacted.make("sk-test"),
  timeoutMs: 1000,
  idleTimeoutMs: 1000,
  maxConnections: 1
}
const model: ModelConfig = {
  id: "m",
  plugin: "text",
  upstreams: [upstream],
  upstreamModel: "m-up",
  pricing: {} as ModelPricing,
  maxOutputTokens: 100
}

const VENDOR_TEXT = "org-Secret123 exceeded quota on project proj_abc (request req_987)"

const services = routingLayer({ upstreams: new Map([[upstream.name, upstream]]), models: [model] }).pipe(
  Layer.provideMerge(Database.layer(memoryPglite()))
)

layer(services, { timeout: "60 seconds" })("a deployment's lastError", (it) => {
  it.effect("names the reason, code and vendor status, never the vendor's text", () =>
    Effect.gen(function* () {
      const deployments = yield* Deployments
      const failure = pluginFailure("unavailable", `the upstream failed with HTTP 500: ${VENDOR_TEXT}`, {
        upstreamStatus: 500,
        detail: JSON.stringify({ error: { message: VENDOR_TEXT } }),
        code: "upstream_error"
      })
      yield* Effect.flip(
        deployments.route({ ...model, maxOutputTokens: 100, pricing: {} }, {}, () => Effect.fail(failure))
      )
      const status = yield* deployments.status
      const lastError = status.find((entry) => entry.name === "vendor")?.deployments[0]?.lastError
      assert.isDefined(lastError)
      assert.strictEqual(lastError?.message, "unavailable, upstream_error, upstream HTTP 500")
      assert.notInclude(JSON.stringify(status), "Secret123")
    })
  )
})
