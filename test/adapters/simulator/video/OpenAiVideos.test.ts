import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { type RunningSimulator, startSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"
import { probe } from "../../../support/Ffprobe.ts"
import { type Body, call, downloadAndProbe, pollUntil } from "./VideoHttp.ts"

const VIDEO_KEYS = [
  "id",
  "object",
  "model",
  "status",
  "progress",
  "created_at",
  "completed_at",
  "expires_at",
  "prompt",
  "size",
  "seconds",
  "remixed_from_video_id",
  "error"
]

const isFinal = (video: Body) => video.status === "completed" || video.status === "failed"

let sim: RunningSimulator
let client: OpenAI
let dir: string
beforeAll(async () => {
  sim = await startSimulator({ videoMillis: 200 })
  client = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
  dir = mkdtempSync(join(tmpdir(), "tollgate-sim-openai-videos-"))
})
afterAll(async () => {
  await sim.close()
  rmSync(dir, { recursive: true, force: true })
})

describe("OpenAI videos on the simulator", () => {
  it("SDK (multipart): create → retrieve until completed → downloadContent is a real MP4 of the asked size", async () => {
    const created = await client.videos.create({
      model: "sora-2",
      prompt: "A calico cat playing a piano on stage",
      seconds: "4",
      size: "864x496" as never
    })
    assert.deepStrictEqual(Object.keys(created), VIDEO_KEYS)
    assert.strictEqual(created.object, "video")
    assert.strictEqual(created.status, "queued")
    assert.strictEqual(created.progress, 0)
    assert.strictEqual(created.seconds, "4")
    assert.strictEqual(created.size, "864x496")
    assert.strictEqual(created.prompt, "A calico cat playing a piano on stage")
    assert.isNull(created.completed_at)
    assert.isNull(created.expires_at)
    assert.isNull(created.remixed_from_video_id)
    assert.isNull(created.error)
    assert.notProperty(created, "usage")

    const early = await client.videos.downloadContent(created.id).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.instanceOf(early, OpenAI.NotFoundError)

    const seen: Array<Body> = []
    let video = await client.videos.retrieve(created.id)
    while (!isFinal(video)) {
      seen.push(video)
      await new Promise((resolve) => setTimeout(resolve, 15))
      video = await client.videos.retrieve(created.id)
    }
    assert.strictEqual(video.status, "completed", JSON.stringify(video))
    assert.strictEqual(video.progress, 100)
    assert.deepStrictEqual(Object.keys(video), VIDEO_KEYS)
    assert.isNumber(video.completed_at)
    assert.isAbove(video.expires_at!, video.completed_at!)
    assert.isNull(video.error)
    const progress = seen.map((v) => v.progress as number)
    assert.deepStrictEqual(
      progress,
      progress.toSorted((a, b) => a - b),
      "progress never goes down"
    )
    assert.isTrue(progress.every((p) => p >= 0 && p <= 99))
    assert.isTrue(seen.every((v) => (v.status === "queued") === (v.progress === 0)))

    const response = await client.videos.downloadContent(created.id)
    assert.strictEqual(response.headers.get("content-type"), "video/mp4")
    const bytes = new Uint8Array(await response.arrayBuffer())
    assert.strictEqual(Number(response.headers.get("content-length")), bytes.byteLength)
    const file = join(dir, "sdk.mp4")
    writeFileSync(file, bytes)
    const info = await probe(file)
    assert.strictEqual(info.video.codec, "h264")
    assert.deepStrictEqual([info.video.width, info.video.height], [864, 496])
    assert.approximately(info.durationSeconds, 4, 0.1)
    assert.strictEqual(info.audio?.codec, "aac")
  })

  it("JSON create with a gateway-style body; progress rises with time; odd sizes and lengths are fine", async () => {
    const created = await call(sim, "POST", "/v1/videos", {
      model: "sora-2",
      prompt: "a paper boat",
      seconds: "3",
      size: "640x360",
      input_reference: { image_url: "https://example.com/first.png" }
    })
    assert.strictEqual(created.status, 200, JSON.stringify(created.body))
    assert.deepStrictEqual(Object.keys(created.body), VIDEO_KEYS)
    const seen = await pollUntil(sim, `/v1/videos/${created.body.id}`, isFinal)
    assert.strictEqual(seen.at(-1).status, "completed")
    const download = await downloadAndProbe(`${sim.baseUrl}/v1/videos/${created.body.id}/content`, {
      authorization: `Bearer ${sim.apiKey}`
    })
    assert.strictEqual(download.status, 200)
    assert.deepStrictEqual([download.info.video.width, download.info.video.height], [640, 360])
    assert.approximately(download.info.durationSeconds, 3, 0.1)
  })

  it("validates: prompt, seconds (a string, 1..20), size (even WxH up to 2200)", async () => {
    const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["prompt", { prompt: "" }],
      ["seconds", { seconds: 4 }],
      ["seconds", { seconds: "0" }],
      ["seconds", { seconds: "21" }],
      ["seconds", { seconds: "4.5" }],
      ["size", { size: "1281x720" }],
      ["size", { size: "2202x720" }],
      ["size", { size: "big" }],
      ["input_reference", { input_reference: { url: 1 } }]
    ]
    for (const [param, override] of cases) {
      const answer = await call(sim, "POST", "/v1/videos", { prompt: "x", ...override })
      assert.strictEqual(answer.status, 400, JSON.stringify(override))
      assert.strictEqual(answer.body.error.param, param, JSON.stringify(override))
      assert.strictEqual(answer.body.error.type, "invalid_request_error")
    }
    const edges = await call(sim, "POST", "/v1/videos", {
      prompt: "edges [sim:video-stall]",
      seconds: "20",
      size: "2200x16"
    })
    assert.strictEqual(edges.status, 200, JSON.stringify(edges.body))
    const defaults = await call(sim, "POST", "/v1/videos", { prompt: "defaults [sim:video-stall]" })
    assert.deepStrictEqual(
      [defaults.body.model, defaults.body.seconds, defaults.body.size],
      ["sora-2", "4", "720x1280"]
    )
  })

  it("[sim:video-fail] fails with moderation_blocked and has no content; [sim:video-stall] stays in progress", async () => {
    const failing = await client.videos.create({ prompt: "a cartoon [sim:video-fail]", seconds: "4" })
    const stalling = await client.videos.create({ prompt: "stuck [sim:video-stall]", seconds: "4" })
    const failed = (await pollUntil(sim, `/v1/videos/${failing.id}`, isFinal)).at(-1)
    assert.strictEqual(failed.status, "failed")
    assert.strictEqual(failed.error.code, "moderation_blocked")
    assert.isString(failed.error.message)
    assert.isNull(failed.completed_at)
    const content = await call(sim, "GET", `/v1/videos/${failing.id}/content`)
    assert.strictEqual(content.status, 404)
    assert.isString(content.body.error.message)
    await new Promise((resolve) => setTimeout(resolve, 300))
    const stalled = await client.videos.retrieve(stalling.id)
    assert.strictEqual(stalled.status, "in_progress")
    assert.isBelow(stalled.progress, 100)
  })

  it("[sim:video-404=N]: the first N retrieves answer 404 as for an unknown video, then it is known", async () => {
    const created = await client.videos.create({ prompt: "not replicated yet [sim:video-404=1]", seconds: "4" })
    const unseen = await call(sim, "GET", `/v1/videos/${created.id}`)
    assert.strictEqual(unseen.status, 404)
    assert.strictEqual(unseen.body.error.type, "invalid_request_error")
    const seen = await call(sim, "GET", `/v1/videos/${created.id}`)
    assert.strictEqual(seen.status, 200)
    assert.strictEqual(seen.body.id, created.id)
  })

  it("401 without the key; 404 for an unknown id; list and delete", async () => {
    const noKey = await call(sim, "POST", "/v1/videos", { prompt: "x" }, {})
    assert.strictEqual(noKey.status, 401)
    assert.strictEqual(noKey.body.error.type, "invalid_request_error")
    const wrong = await call(sim, "GET", "/v1/videos/video_x", undefined, { authorization: "Bearer nope" })
    assert.strictEqual(wrong.status, 401)
    for (const path of ["/v1/videos/video_unknown", "/v1/videos/video_unknown/content"]) {
      const missing = await call(sim, "GET", path)
      assert.strictEqual(missing.status, 404, path)
      assert.strictEqual(missing.body.error.type, "invalid_request_error")
    }
    const created = await client.videos.create({ prompt: "to delete [sim:video-stall]" })
    const page = await call(sim, "GET", "/v1/videos?limit=2")
    assert.strictEqual(page.body.object, "list")
    assert.strictEqual(page.body.data[0].id, created.id)
    assert.strictEqual(page.body.first_id, created.id)
    assert.isTrue(page.body.has_more)
    const deleted = await client.videos.delete(created.id)
    assert.deepStrictEqual(deleted, { id: created.id, object: "video.deleted", deleted: true })
    const gone = await call(sim, "GET", `/v1/videos/${created.id}`)
    assert.strictEqual(gone.status, 404)
  })

  it("fault knobs apply: a forced 503 in OpenAI's envelope, a latency", async () => {
    sim.setFaults({ status: 503 }, 1)
    const forced = await call(sim, "POST", "/v1/videos", { prompt: "x" })
    assert.strictEqual(forced.status, 503)
    assert.strictEqual(forced.body.error.type, "service_unavailable_error")
    const started = Date.now()
    const slow = await call(sim, "GET", "/v1/videos?limit=1", undefined, {
      authorization: `Bearer ${sim.apiKey}`,
      "x-sim-fault": "latency=150"
    })
    assert.strictEqual(slow.status, 200)
    assert.isAtLeast(Date.now() - started, 140)
  })
})
