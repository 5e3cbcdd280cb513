/**
 * Our built-in text plugin against the shared contract: one model per upstream protocol, every upstream the simulator
 * on a loopback port, through the real upstream client.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Result, Scope } from "effect"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import type { ChatPlugin, PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { outputCap } from "../../../src/plugins/text/TextPricing.ts"
import { makeTextPlugin } from "../../../src/plugins/text/TextPlugin.ts"
import { chatRequests } from "./fixtures.ts"
import { chatCall, describePluginContract, responseToIR } from "./pluginContract.ts"

let simulator: RunningSimulator
let scope: Scope.Closeable
let plugin: ChatPlugin
let models: ReadonlyArray<PluginModel>

beforeAll(async () => {
  // A short pause between events, so an abort after the first frame lands while the stream is still running.
  simulator = await startSimulator({ faults: { chunkDelayMs: 5 } })
  scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(UpstreamClient.layer, scope))
  plugin = makeTextPlugin(context.mapUnsafe.get(UpstreamClient.key) as UpstreamClient["Service"])
  const upstream = (protocol: UpstreamConfig["protocol"], baseUrl: string): UpstreamConfig => ({
    name: `sim-${protocol}`,
    protocol,
    baseUrl,
    apiKey: Redacted.make(simulator.apiKey),
    timeoutMs: 10_000,
    idleTimeoutMs: 10_000,
    maxConnections: 8
  })
  const model = (id: string, upstreamModel: string, route: UpstreamConfig): PluginModel => ({
    id,
    upstreams: [route],
    upstreamModel,
    pricing: { input: 150_000n, output: 600_000n },
    maxOutputTokens: 4096
  })
  models = [
    model("text-openai", "gpt-4o-mini", upstream("openai", `${simulator.baseUrl}/v1`)),
    model("text-anthropic", "claude-sonnet-4-5", upstream("anthropic", simulator.baseUrl)),
    model("text-gemini", "gemini-2.5-flash", upstream("gemini", simulator.baseUrl))
  ]
}, 30_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await simulator?.close()
})

describePluginContract("text (built-in, against the simulator)", () => plugin, {
  models: () => models,
  requests: chatRequests
})

// The hold covers the output the request asks for, or the model's cap when it names none (TextPricing.outputCap);
// buildCall sends that limit upstream on every path, so an upstream can never write more than was held.
describe("text plugin: the model's output cap", () => {
  it("never lets an upstream produce more output than the hold covers", async () => {
    // (a request's own max_tokens is honoured; the model's cap applies when it names none)
    const over: Array<string> = []
    for (const request of chatRequests) {
      for (const base of models) {
        const model = { ...base, maxOutputTokens: 8 }
        const call = chatCall(request, model, false)
        const held = outputCap(call.request, model)
        const reply = await Effect.runPromise(plugin.invoke(call))
        if (reply._tag !== "Body") continue
        const ir = responseToIR(reply.dialect, reply.body, model)
        const output = Result.isSuccess(ir) ? ir.success.usage.outputTokens : -1
        if (output > held) over.push(`${request.name} on ${base.id}: ${output} output tokens, ${held} held`)
      }
    }
    assert.deepStrictEqual(over, [])
  })
})
