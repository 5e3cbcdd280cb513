/** A simulator and a real upstream client for the embeddings and audio plugin tests, opened and closed per file. */
import { freePort } from "../../support/Ports.ts"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import type { ModelPricing } from "../../../src/app/config/ModelPricing.ts"
import type { PluginFailure, PluginModel } from "../../../src/plugins/ModelPlugin.ts"

export interface Harness {
  readonly sim: RunningSimulator
  readonly client: UpstreamClient["Service"]
  readonly close: () => Promise<void>
}

export const openHarness = async (): Promise<Harness> => {
  const sim = await startSimulator()
  const scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(UpstreamClient.layer, scope))
  const client = context.mapUnsafe.get(UpstreamClient.key) as UpstreamClient["Service"]
  return {
    sim,
    client,
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await sim.close()
    }
  }
}

export const upstreamOn = (
  sim: RunningSimulator,
  protocol: "openai" | "gemini",
  overrides: Partial<UpstreamConfig> = {}
): UpstreamConfig => ({
  name: `sim-${protocol}`,
  protocol,
  baseUrl: protocol === "openai" ? `${sim.baseUrl}/v1` : sim.baseUrl,
  apiKey: Redacted.make(sim.apiKey),
  timeoutMs: 10_000,
  idleTimeoutMs: 10_000,
  maxConnections: 4,
  ...overrides
})

export const modelOn = (
  upstreams: ReadonlyArray<UpstreamConfig>,
  upstreamModel: string,
  pricing: ModelPricing
): PluginModel => ({ id: `test-${upstreamModel}`, upstreams, upstreamModel, pricing, maxOutputTokens: 4096 })

export const run = <A>(effect: Effect.Effect<A, PluginFailure>): Promise<A> => Effect.runPromise(effect)

export const failure = async <A>(effect: Effect.Effect<A, PluginFailure>): Promise<PluginFailure> => {
  const exit = await Effect.runPromise(Effect.exit(effect))
  if (Exit.isSuccess(exit)) throw new Error("expected a PluginFailure")
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (reason === undefined || reason._tag !== "Fail") throw new Error(`not a failure: ${exit.cause}`)
  return reason.error
}

export const collect = async (body: AsyncIterable<Uint8Array>): Promise<Buffer> => {
  const parts: Array<Uint8Array> = []
  for await (const part of body) parts.push(part)
  return Buffer.concat(parts)
}

/** A port nothing listens on. */
export const closedPort = freePort

/** A mono 16-bit PCM WAV of `seconds` of a 440 Hz tone. */
export const wavFile = (seconds: number, sampleRate = 16_000): Uint8Array => {
  const samples = Math.round(seconds * sampleRate)
  const data = Buffer.alloc(samples * 2)
  for (let i = 0; i < samples; i++) {
    data.writeInt16LE(Math.round(Math.sin((2 * Math.PI * 440 * i) / sampleRate) * 8000), i * 2)
  }
  const header = Buffer.alloc(44)
  header.write("RIFF", 0, "ascii")
  header.writeUInt32LE(36 + data.length, 4)
  header.write("WAVE", 8, "ascii")
  header.write("fmt ", 12, "ascii")
  header.writeUInt32LE(16, 16)
  header.writeUInt16LE(1, 20)
  header.writeUInt16LE(1, 22)
  header.writeUInt32LE(sampleRate, 24)
  header.writeUInt32LE(sampleRate * 2, 28)
  header.writeUInt16LE(2, 32)
  header.writeUInt16LE(16, 34)
  header.write("data", 36, "ascii")
  header.writeUInt32LE(data.length, 40)
  return Buffer.concat([header, data])
}
