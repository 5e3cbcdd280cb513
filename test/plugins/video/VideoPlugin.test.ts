/**
 * The video plugin end to end against the simulator's Ark and OpenAI videos APIs, through the real upstream client:
 * create, poll until done, download the real MP4 and check it is the size and length asked for; the create bodies as
 * the simulator received them; failures; fallback.
 */
import { freePort } from "../../support/Ports.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { mp4Info, usageFromFile } from "../../../src/adapters/media/Mp4Info.ts"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import { pixelSize, type VideoRequest, videoTokens } from "../../../src/domain/video/VideoSpec.ts"
import type {
  PluginFailure,
  PluginModel,
  VideoCall,
  VideosPlugin,
  VideoTaskRef,
  VideoUpstreamStatus
} from "../../../src/plugins/ModelPlugin.ts"
import { makeGuardedFetcher } from "../../../src/adapters/fetch/GuardedFetcher.ts"
import { makeVideoPlugin } from "../../../src/plugins/video/VideoPlugin.ts"

let sim: RunningSimulator
let scope: Scope.Closeable
let plugin: VideosPlugin

const upstream = (name: string, protocol: UpstreamConfig["protocol"], baseUrl: string): UpstreamConfig => ({
  name,
  protocol,
  baseUrl,
  apiKey: Redacted.make(sim.apiKey),
  timeoutMs: 10_000,
  idleTimeoutMs: 10_000,
  maxConnections: 4
})

const ark = () => upstream("sim-ark", "ark", `${sim.baseUrl}/api/v3`)
const sora = () => upstream("sim-openai-videos", "openai-videos", `${sim.baseUrl}/v1`)

const model = (upstreams: ReadonlyArray<UpstreamConfig>, upstreamModel = "seedance-2-0-fast"): PluginModel => ({
  id: "video-model-2.0-fast",
  upstreams,
  upstreamModel,
  pricing: makeModelPricing({ output: 1_400_000n }),
  maxOutputTokens: 4096
})

const request = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  prompt: "a paper boat drifting down a rainy street",
  seconds: 4,
  resolution: "480p",
  ratio: "16:9",
  inputType: "text_to_video",
  images: [],
  videos: [],
  ...overrides
})

const call = (on: PluginModel, overrides: Partial<VideoRequest> = {}): VideoCall => ({
  model: on,
  request: request(overrides),
  taskId: "video_plugin_test",
  signal: new AbortController().signal
})

const run = <A>(effect: Effect.Effect<A, PluginFailure>): Promise<A> => Effect.runPromise(effect)

const failure = async <A>(effect: Effect.Effect<A, PluginFailure>): Promise<PluginFailure> => {
  const exit = await Effect.runPromise(Effect.exit(effect))
  if (Exit.isSuccess(exit)) throw new Error("expected a PluginFailure")
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  if (reason === undefined || reason._tag !== "Fail") throw new Error(`not a failure: ${exit.cause}`)
  return reason.error
}

/** Polls every 40 ms until the task leaves the pending states. */
const untilSettled = (task: VideoTaskRef): Promise<ReadonlyArray<VideoUpstreamStatus>> =>
  run(
    Effect.gen(function* () {
      const seen: Array<VideoUpstreamStatus> = []
      for (;;) {
        const status = yield* plugin.poll(task)
        seen.push(status)
        if (status._tag !== "Pending") return seen
        yield* Effect.sleep(Duration.millis(40))
      }
    }).pipe(Effect.timeout(Duration.seconds(20)), Effect.orDie)
  )

const createBodies = (): ReadonlyArray<Record<string, unknown>> =>
  sim
    .calls()
    .filter(
      (c) => c.method === "POST" && (c.path.endsWith("/contents/generations/tasks") || c.path.endsWith("/videos"))
    )
    .map((c) => c.body as Record<string, unknown>)

const collect = async (body: AsyncIterable<Uint8Array>): Promise<Uint8Array> => {
  const parts: Array<Uint8Array> = []
  for await (const part of body) parts.push(part)
  return Buffer.concat(parts)
}

beforeAll(async () => {
  sim = await startSimulator({ videoMillis: 200 })
  scope = Effect.runSync(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(UpstreamClient.layer, scope))
  const client = context.mapUnsafe.get(UpstreamClient.key) as UpstreamClient["Service"]
  plugin = makeVideoPlugin(client, makeGuardedFetcher())
}, 30_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  await sim?.close()
})

describe("video plugin on the simulator's Ark API", () => {
  it("creates, polls to success and downloads an MP4 of the requested size and length", async () => {
    sim.clearCalls()
    const on = model([ark()])
    const created = await run(plugin.create(call(on)))
    assert.strictEqual(created.upstreamIndex, 0)
    const task: VideoTaskRef = { ...call(on), ...created }
    const states = await untilSettled(task)
    const last = states.at(-1)
    assert.strictEqual(last?._tag, "Succeeded", JSON.stringify(states))
    for (const state of states.slice(0, -1)) {
      assert.isTrue(state._tag === "Pending" && (state.progress === 0 || state.progress === 50))
    }
    if (last?._tag !== "Succeeded") return
    const expected = videoTokens(pixelSize("480p", "16:9"), 4)
    assert.strictEqual(last.completionTokens, Number(expected))
    const download = await run(plugin.download(task, last.videoUrl))
    assert.strictEqual(download.contentType, "video/mp4")
    const bytes = await collect(download.body)
    if (download.contentLength !== null) assert.strictEqual(bytes.length, download.contentLength)
    const info = mp4Info(bytes)
    assert.strictEqual(info._tag, "Mp4Info", info._tag === "Mp4InfoError" ? info.reason : "")
    if (info._tag !== "Mp4Info") return
    assert.deepStrictEqual([info.width, info.height, Math.round(info.durationSeconds)], [864, 496, 4])
    assert.deepStrictEqual(usageFromFile(info), { tokens: expected, reported: false })
    // The signed link is fetched without the API key.
    const fetched = sim.calls().filter((c) => c.method === "GET" && !c.path.includes("/contents/generations/tasks"))
    assert.isAbove(fetched.length, 0)
    for (const c of fetched) assert.isUndefined(c.headers.authorization, c.path)
  })

  it("sends each input type's content as Ark expects", async () => {
    sim.clearCalls()
    const on = model([ark()])
    const images = ["https://img.example/first.png", "https://img.example/last.png"]
    const clip = "https://img.example/clip.mp4"
    await run(plugin.create(call(on)))
    await run(plugin.create(call(on, { inputType: "first_last_frame", images })))
    await run(plugin.create(call(on, { inputType: "reference", images, videos: [clip] })))
    await run(plugin.create(call(on, { inputType: "reference", images: [images[0] as string] })))
    const bodies = createBodies()
    assert.strictEqual(bodies.length, 4)
    const text = { type: "text", text: request().prompt }
    const image = (url: string, role: string) => ({ type: "image_url", image_url: { url }, role })
    assert.deepStrictEqual(bodies[0], {
      model: "seedance-2-0-fast",
      content: [text],
      resolution: "480p",
      ratio: "16:9",
      duration: 4,
      generate_audio: true,
      watermark: false
    })
    assert.deepStrictEqual(bodies[1]?.content, [
      text,
      image(images[0] as string, "first_frame"),
      image(images[1] as string, "last_frame")
    ])
    assert.deepStrictEqual(bodies[2]?.content, [
      text,
      image(images[0] as string, "reference_image"),
      image(images[1] as string, "reference_image"),
      { type: "video_url", video_url: { url: clip }, role: "reference_video" }
    ])
    assert.deepStrictEqual(bodies[3]?.content, [text, image(images[0] as string, "first_frame")])
  })

  it("maps a failed and an expired task with the vendor's codes", async () => {
    const on = model([ark()])
    const settle = async (prompt: string) => {
      const created = await run(plugin.create(call(on, { prompt })))
      return (await untilSettled({ ...call(on, { prompt }), ...created })).at(-1)
    }
    const failed = await settle("a storm [sim:video-fail]")
    assert.deepStrictEqual(failed?._tag === "Failed" && [failed.reason, failed.code], [
      "failed",
      "OutputVideoSensitiveContentDetected"
    ])
    const expired = await settle("a storm [sim:video-expire]")
    assert.deepStrictEqual(expired?._tag === "Failed" && [expired.reason, expired.code], ["expired", "TaskExpired"])
  })

  it("falls back to the next upstream when the first refuses connections", async () => {
    const down = upstream("down", "ark", `http://127.0.0.1:${await freePort()}/api/v3`)
    const created = await run(plugin.create(call(model([down, ark()]))))
    assert.strictEqual(created.upstreamIndex, 1)
  })

  it("maps upstream errors: the status and retry-after for polls, a missing task as expired", async () => {
    const on = model([ark()])
    const created = await run(plugin.create(call(on)))
    const task: VideoTaskRef = { ...call(on), ...created }
    sim.setFaults({ status: 429, retryAfterSeconds: 4 }, 1)
    const limited = await failure(plugin.poll(task))
    assert.deepStrictEqual([limited.reason, limited.retryAfterSeconds], ["rate_limited", 4])
    sim.setFaults({ status: 503, retryAfterSeconds: 2 }, 1)
    const overloaded = await failure(plugin.poll(task))
    assert.deepStrictEqual([overloaded.reason, overloaded.retryAfterSeconds], ["overloaded", 2])
    const missing = await run(plugin.poll({ ...task, upstreamTaskId: "cgt-00000000000000-nope" }))
    assert.deepStrictEqual(missing._tag === "Failed" && [missing.reason, missing.code], [
      "expired",
      "upstream_task_missing"
    ])
    sim.setFaults({ malformed: true }, 1)
    assert.strictEqual((await failure(plugin.poll(task))).reason, "unavailable")
    sim.setFaults({ status: 400 }, 1)
    assert.strictEqual((await failure(plugin.create(call(on)))).reason, "invalid_request")
  })
})

describe("video plugin on the simulator's OpenAI videos API", () => {
  it("creates, polls to completion and downloads the content with the key", async () => {
    sim.clearCalls()
    const on = model([sora()], "sora-2")
    const created = await run(plugin.create(call(on, { resolution: "720p", ratio: "9:16" })))
    const task: VideoTaskRef = { ...call(on, { resolution: "720p", ratio: "9:16" }), ...created }
    assert.deepStrictEqual(createBodies()[0], {
      model: "sora-2",
      prompt: request().prompt,
      seconds: "4",
      size: "720x1280"
    })
    const states = await untilSettled(task)
    const last = states.at(-1)
    assert.strictEqual(last?._tag, "Succeeded", JSON.stringify(states))
    if (last?._tag !== "Succeeded") return
    assert.isNull(last.completionTokens)
    assert.strictEqual(last.videoUrl, `${sim.baseUrl}/v1/videos/${created.upstreamTaskId}/content?variant=video`)
    const download = await run(plugin.download(task, last.videoUrl))
    const info = mp4Info(await collect(download.body))
    assert.strictEqual(info._tag, "Mp4Info", info._tag === "Mp4InfoError" ? info.reason : "")
    if (info._tag !== "Mp4Info") return
    assert.deepStrictEqual([info.width, info.height, Math.round(info.durationSeconds)], [720, 1280, 4])
    const content = sim.calls().find((c) => c.path.includes("/content"))
    assert.strictEqual(content?.headers.authorization, `Bearer ${sim.apiKey}`)
  })

  it("maps a failed video with its error code", async () => {
    const on = model([sora()], "sora-2")
    const created = await run(plugin.create(call(on, { prompt: "a storm [sim:video-fail]" })))
    const last = (await untilSettled({ ...call(on), ...created })).at(-1)
    assert.deepStrictEqual(last?._tag === "Failed" && [last.reason, last.code], ["failed", "moderation_blocked"])
    const missing = await run(plugin.poll({ ...call(on), upstreamTaskId: "video_nope", upstreamIndex: 0 }))
    assert.deepStrictEqual(missing._tag === "Failed" && missing.code, "upstream_task_missing")
  })

  it("sends one reference image as input_reference", async () => {
    sim.clearCalls()
    await run(
      plugin.create(call(model([sora()], "sora-2"), { inputType: "reference", images: ["https://img.example/a.png"] }))
    )
    assert.deepStrictEqual(createBodies()[0]?.input_reference, { image_url: "https://img.example/a.png" })
  })

  it("rejects first_last_frame with a 400 before calling the upstream", async () => {
    sim.clearCalls()
    const refused = await failure(
      plugin.create(
        call(model([sora()], "sora-2"), {
          inputType: "first_last_frame",
          images: ["https://img.example/a.png", "https://img.example/b.png"]
        })
      )
    )
    assert.strictEqual(refused.reason, "invalid_request")
    assert.include(refused.message, "sim-openai-videos")
    assert.strictEqual(sim.calls().length, 0)
  })
})
