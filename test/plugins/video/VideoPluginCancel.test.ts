/**
 * What the worker relies on to keep one upstream task per gateway task: the create sends an idempotency key derived
 * from the gateway task id where the protocol takes one (openai-videos), and an orphaned upstream task can be
 * cancelled (ark: DELETE of a queued task; openai-videos: DELETE of the video).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import type { PluginFailure, PluginModel, VideoCall } from "../../../src/plugins/ModelPlugin.ts"
import { makeGuardedFetcher } from "../../../src/adapters/fetch/GuardedFetcher.ts"
import { makeVideoPlugin, videoIdempotencyKey } from "../../../src/plugins/video/VideoPlugin.ts"

let sim: RunningSimulator
let scope: Scope.Closeable
let plugin: ReturnType<typeof makeVideoPlugin>

const upstream = (name: string, protocol: UpstreamConfig["protocol"], baseUrl: string): UpstreamConfig => ({
  name,
  protocol,
  baseUrl,
  apiKey: Redacted.make(sim.apiKey),
  timeoutMs: 10_000,
  idleTimeoutMs: 10_000,
  maxConnections: 4
})

const model = (on: UpstreamConfig, upstreamModel: string): PluginModel => ({
  id: "video-model-2.0-fast",
  upstreams: [on],
  upstreamModel,
  pricing: makeModelPricing({ output: 1_400_000n }),
  maxOutputTokens: 4096
})

const call = (on: PluginModel, taskId: string): VideoCall => ({
  model: on,
  request: {
    prompt: "a paper boat drifting down a rainy street",
    seconds: 4,
    resolution: "480p",
    ratio: "16:9",
    inputType: "text_to_video",
    images: [],
    videos: []
  },
  taskId,
  signal: new AbortController().signal
})

const run = <A>(effect: Effect.Effect<A, PluginFailure>): Promise<A> => Effect.runPromise(effect)

beforeAll(async () => {
  // Tasks stay queued for their first 2 s: long enough to cancel one on Ark.
  sim = await startSimulator({ videoMillis: 20_000 })
  scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(UpstreamClient.layer, scope))
  const client = context.mapUnsafe.get(UpstreamClient.key) as UpstreamClient["Service"]
  plugin = makeVideoPlugin(client, makeGuardedFetcher())
}, 30_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await sim?.close()
})

describe("video plugin: idempotent create and orphan cancellation", () => {
  it("cancels a queued Ark task, which the upstream then reports as cancelled", async () => {
    sim.clearCalls()
    const on = model(upstream("sim-ark", "ark", `${sim.baseUrl}/api/v3`), "seedance-2-0-fast")
    const created = await run(plugin.create(call(on, "video_cancel_ark")))
    const task = { ...call(on, "video_cancel_ark"), ...created }
    await run(plugin.cancel(task))
    const deletes = sim.calls().filter((c) => c.method === "DELETE")
    assert.deepStrictEqual(
      deletes.map((c) => c.path),
      [`/api/v3/contents/generations/tasks/${created.upstreamTaskId}`]
    )
    const status = await run(plugin.poll(task))
    assert.strictEqual(status._tag, "Failed", JSON.stringify(status))
    assert.strictEqual(status._tag === "Failed" ? status.reason : undefined, "cancelled")
    // Ark sends no idempotency key: its API has none.
    const create = sim.calls().find((c) => c.method === "POST")
    assert.isUndefined(create?.headers["idempotency-key"])
  })

  it("sends the task's idempotency key on an OpenAI videos create and deletes an orphaned video", async () => {
    sim.clearCalls()
    const on = model(upstream("sim-openai-videos", "openai-videos", `${sim.baseUrl}/v1`), "sora-2")
    const created = await run(plugin.create(call(on, "video_cancel_sora")))
    const create = sim.calls().find((c) => c.method === "POST" && c.path === "/v1/videos")
    assert.strictEqual(create?.headers["idempotency-key"], videoIdempotencyKey("video_cancel_sora"))
    assert.strictEqual(videoIdempotencyKey("video_cancel_sora"), "tollgate-video_cancel_sora")
    const task = { ...call(on, "video_cancel_sora"), ...created }
    await run(plugin.cancel(task))
    assert.deepStrictEqual(
      sim
        .calls()
        .filter((c) => c.method === "DELETE")
        .map((c) => c.path),
      [`/v1/videos/${created.upstreamTaskId}`]
    )
    // Gone upstream: a poll maps the 404 to an upstream expiry.
    const status = await run(plugin.poll(task))
    assert.strictEqual(status._tag === "Failed" ? status.code : status._tag, "upstream_task_missing")
  })
})
