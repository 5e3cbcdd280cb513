/**
 * The built-in simulator and a real upstream client for a contract suite, opened before the suite is declared (the
 * suites take their models when they are declared) and closed after the file. `refusing` is an upstream nothing
 * listens on: the failing fixture every kind shares.
 */
import { afterAll } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { ModelPricing } from "../../../src/app/config/ModelPricing.ts"
import type { UpstreamConfig } from "../../../src/app/config/OperatorConfigData.ts"
import type { PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { freePort } from "../../support/Ports.ts"

export const simulatedUpstreams = async () => {
  const sim = await startSimulator()
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(UpstreamClient.layer, scope))
  const client = context.mapUnsafe.get(UpstreamClient.key) as UpstreamClient["Service"]
  afterAll(async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await sim.close()
  })
  const paths: Readonly<Record<UpstreamConfig["protocol"], string>> = {
    openai: "/v1",
    "openai-responses": "/v1",
    "openai-videos": "/v1",
    anthropic: "",
    gemini: "",
    ark: "/api/v3"
  }
  const upstream = (protocol: UpstreamConfig["protocol"], origin = sim.baseUrl): UpstreamConfig => ({
    name: `sim-${protocol}`,
    protocol,
    baseUrl: `${origin}${paths[protocol]}`,
    apiKey: Redacted.make(sim.apiKey),
    timeoutMs: 10_000,
    idleTimeoutMs: 10_000,
    maxConnections: 8
  })
  const refusingOrigin = `http://127.0.0.1:${await freePort()}`
  const model = (
    id: string,
    route: UpstreamConfig,
    pricing: ModelPricing,
    upstreamModel: string = id
  ): PluginModel => ({ id, upstreams: [route], upstreamModel, pricing, maxOutputTokens: 4096 })
  return {
    sim,
    client,
    upstream,
    model,
    /** The same upstream on a port nothing listens on. */
    refusing: (protocol: UpstreamConfig["protocol"]) => upstream(protocol, refusingOrigin)
  }
}
