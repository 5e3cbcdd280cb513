/**
 * The gateway both batch surfaces are tested on (Batches.test.ts: OpenAI's; MessageBatches.test.ts: Anthropic's):
 * a text model on each vendor's simulator (one with its own batch prices), an embeddings model, one upstream that
 * always fails and one that answers slowly (for cancelling mid-run), and the batch prices the ledger must show.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

const configYaml = (sim: string, broken: string, slow: string) => `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-anthropic: { protocol: anthropic, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-gemini: { protocol: gemini, baseUrl: "${sim}", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  broken: { protocol: openai, baseUrl: "${broken}/v1", apiKey: "sk-sim-test-key", timeoutMs: 5000 }
  slow: { protocol: openai, baseUrl: "${slow}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-anthropic, plugin: text, upstreams: [sim-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60", batchInput: "0.10", batchOutput: "0.40" } }
  - { id: sim-gemini, plugin: text, upstreams: [sim-gemini], upstreamModel: sim-gemini, pricing: { input: "0.15", output: "0.60" }, batchDiscountPercent: 20 }
  - { id: broken-model, plugin: text, upstreams: [broken], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-embedding, plugin: embeddings, upstreams: [sim-openai], upstreamModel: sim-embedding, pricing: { input: "0.02" } }
  - { id: slow-model, plugin: text, upstreams: [slow], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
`

/**
 * Micro-dollars per 1M tokens at batch prices: explicit keys (sim-anthropic), else the interactive ones less the
 * model's `batchDiscountPercent` (sim-gemini: 20 % off), else half (sim-openai).
 */
export const BATCH_PRICES: Record<string, { input: bigint; output: bigint }> = {
  "sim-openai": { input: 75_000n, output: 300_000n },
  "sim-anthropic": { input: 100_000n, output: 400_000n },
  "sim-gemini": { input: 120_000n, output: 480_000n }
}

export const ceilPerMillion = (tokens: number, price: bigint) => (BigInt(tokens) * price + 999_999n) / 1_000_000n

export const micros = (decimal: string) => {
  const [whole = "0", fraction = ""] = decimal.replace("-", "").split(".")
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0"))
}

export interface BatchGateway {
  readonly gateway: TestGateway
  readonly admin: Admin
  close(): Promise<void>
}

export const startBatchGateway = async (): Promise<BatchGateway> => {
  const sims: Array<RunningSimulator> = [
    await startSimulator(),
    await startSimulator({ faults: { status: 500 } }),
    await startSimulator({ faults: { latencyMs: 150 } })
  ]
  const [sim, broken, slow] = sims as [RunningSimulator, RunningSimulator, RunningSimulator]
  const dir = mkdtempSync(join(tmpdir(), "tollgate-batches-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, configYaml(sim.baseUrl, broken.baseUrl, slow.baseUrl))
  const gateway = await startTestGateway({ configPath })
  return {
    gateway,
    admin: makeAdmin(gateway),
    close: async () => {
      await gateway.close()
      await Promise.all(sims.map((s) => s.close()))
      rmSync(dir, { recursive: true, force: true })
    }
  }
}
