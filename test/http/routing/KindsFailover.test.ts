/**
 * Failover is routing's, for every routed kind: an embeddings, speech or transcription model whose first upstream is
 * unreachable is answered by its second, through the gateway (the plugin makes one attempt per deployment routing
 * picks; UpstreamFailure.ts `onUpstream`), and the answering upstream is called once.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI, { toFile } from "openai"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { makeWav } from "../audio/AudioHarness.ts"
import { type ConfigFile, operatorConfigFile } from "../../support/ConfigFile.ts"
import { freePort } from "../../support/Ports.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { makeAdmin } from "../chat/ChatHarness.ts"

let sim: RunningSimulator
let gateway: TestGateway
let client: OpenAI
let config: ConfigFile | undefined

beforeAll(async () => {
  sim = await startSimulator()
  const down = `http://127.0.0.1:${await freePort()}/v1`
  config = operatorConfigFile(`
upstreams:
  down: { protocol: openai, baseUrl: "${down}", apiKey: "sk-unused", timeoutMs: 5000 }
  sim: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "${sim.apiKey}", timeoutMs: 20000 }
models:
  - { id: emb-over, plugin: embeddings, upstreams: [down, sim], upstreamModel: sim-embedding, pricing: { input: "0.02" } }
  - { id: tts-over, plugin: speech, upstreams: [down, sim], upstreamModel: tts-1, pricing: { perMillionCharacters: "15" } }
  - { id: stt-over, plugin: transcription, upstreams: [down, sim], upstreamModel: gpt-4o-transcribe, pricing: { input: "2.5", output: "10" } }
`)
  gateway = await startTestGateway({ configPath: config.path })
  const customer = await makeAdmin(gateway).customer({ deposit: "10" })
  client = new OpenAI({ apiKey: customer.key, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  await sim?.close()
  config?.remove()
})

const callsTo = (path: string) => sim.calls().filter((call) => call.path === path).length

describe("failover past an unreachable first upstream", () => {
  it("embeddings", async () => {
    const before = callsTo("/v1/embeddings")
    const reply = await client.embeddings.create({ model: "emb-over", input: "over the bridge", dimensions: 8 })
    assert.strictEqual(reply.data[0]?.embedding.length, 8)
    assert.strictEqual(callsTo("/v1/embeddings") - before, 1)
  })

  it("speech", async () => {
    const before = callsTo("/v1/audio/speech")
    const reply = await client.audio.speech.create({
      model: "tts-over",
      input: "Over the bridge.",
      voice: "alloy",
      response_format: "wav"
    })
    assert.isAbove((await reply.arrayBuffer()).byteLength, 44)
    assert.strictEqual(callsTo("/v1/audio/speech") - before, 1)
  })

  it("transcription", async () => {
    const before = callsTo("/v1/audio/transcriptions")
    const reply = await client.audio.transcriptions.create({
      model: "stt-over",
      file: await toFile(makeWav(2), "clip.wav", { type: "audio/wav" })
    })
    assert.include(reply.text, "2.0 seconds")
    assert.strictEqual(callsTo("/v1/audio/transcriptions") - before, 1)
  })
})
