import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type RunningSimulator, startSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"
import { pixelSize, videoTokens } from "../../../../src/domain/video/VideoSpec.ts"
import { type Body, call, downloadAndProbe, pollUntil } from "./VideoHttp.ts"

const TASKS = "/api/v3/contents/generations/tasks"

const text = (prompt: string) => ({ type: "text", text: prompt })
const image = (url: string, role?: string) => ({ type: "image_url", image_url: { url }, ...(role ? { role } : {}) })

const small = (prompt: string, extra: Record<string, unknown> = {}) => ({
  model: "seedance-2-0-fast",
  content: [text(prompt)],
  resolution: "480p",
  ratio: "16:9",
  duration: 4,
  ...extra
})

const isFinal = (task: Body) => !["queued", "running"].includes(task.status)

let sim: RunningSimulator
beforeAll(async () => {
  sim = await startSimulator({ videoMillis: 200 })
})
afterAll(async () => {
  await sim.close()
})

describe("Ark content-generation tasks on the simulator", () => {
  it("create → poll → succeeded: a real 480p 16:9 4 s MP4 with audio, usage from the vendor's formula", async () => {
    const created = await call(sim, "POST", TASKS, small("A girl hugs a fox, slow dolly out"))
    assert.strictEqual(created.status, 200, JSON.stringify(created.body))
    assert.deepStrictEqual(Object.keys(created.body), ["id"])
    assert.match(created.body.id, /^cgt-\d{14}-[0-9a-z]{5}$/)

    const seen = await pollUntil(sim, `${TASKS}/${created.body.id}`, isFinal)
    const task = seen.at(-1)
    assert.strictEqual(task.status, "succeeded", JSON.stringify(task))
    const statuses = [...new Set(seen.map((t) => t.status))]
    assert.deepStrictEqual(statuses.slice(-1), ["succeeded"])
    assert.isTrue(statuses.every((s) => ["queued", "running", "succeeded"].includes(s)))
    for (const early of seen.slice(0, -1)) {
      assert.isUndefined(early.content)
      assert.isUndefined(early.usage)
      assert.isNull(early.error)
    }

    // ceil(864 × 496 × 97 / 1024)
    const tokens = Number(videoTokens(pixelSize("480p", "16:9"), 4))
    assert.strictEqual(tokens, Math.ceil((864 * 496 * 97) / 1024))
    assert.strictEqual(tokens, 40_595)
    assert.deepStrictEqual(task.usage, { completion_tokens: tokens, total_tokens: tokens })
    assert.strictEqual(task.model, "seedance-2-0-fast")
    assert.strictEqual(task.resolution, "480p")
    assert.strictEqual(task.ratio, "16:9")
    assert.strictEqual(task.duration, 4)
    assert.strictEqual(task.framespersecond, 24)
    assert.isNull(task.error)
    assert.isNumber(task.created_at)
    assert.isAtLeast(task.updated_at, task.created_at)

    const url: string = task.content.video_url
    assert.strictEqual(url, `${sim.baseUrl}/sim-files/videos/${created.body.id}.mp4`)
    const file = await downloadAndProbe(url)
    assert.strictEqual(file.status, 200)
    assert.strictEqual(file.contentType, "video/mp4")
    assert.strictEqual(file.contentLength, file.bytes.byteLength)
    assert.strictEqual(file.info.video.codec, "h264")
    assert.deepStrictEqual([file.info.video.width, file.info.video.height], [864, 496])
    assert.approximately(file.info.durationSeconds, 4, 0.1)
    assert.strictEqual(file.info.video.frames, 96)
    assert.strictEqual(file.info.audio?.codec, "aac")
  })

  it("generate_audio: false renders a silent clip; 9:16 gets the portrait pixel size", async () => {
    const created = await call(
      sim,
      "POST",
      TASKS,
      small("silent portrait", { ratio: "9:16", duration: 2, generate_audio: false })
    )
    assert.strictEqual(created.status, 200, JSON.stringify(created.body))
    const task = (await pollUntil(sim, `${TASKS}/${created.body.id}`, isFinal)).at(-1)
    assert.strictEqual(task.status, "succeeded")
    assert.strictEqual(task.usage.completion_tokens, Number(videoTokens({ width: 496, height: 864 }, 2)))
    const file = await downloadAndProbe(task.content.video_url)
    assert.deepStrictEqual([file.info.video.width, file.info.video.height], [496, 864])
    assert.approximately(file.info.durationSeconds, 2, 0.1)
    assert.isNull(file.info.audio)
  })

  it("accepts the image and reference-video modes", async () => {
    const bodies = [
      small("one image", { content: [text("one image"), image("https://example.com/a.png")] }),
      small("two frames", {
        content: [
          text("two frames"),
          image("data:image/png;base64,iVBORw0KGgo=", "first_frame"),
          image("https://example.com/b.png", "last_frame")
        ]
      }),
      small("references", {
        content: [
          text("references"),
          image("https://example.com/a.png", "reference_image"),
          image("https://example.com/b.png", "reference_image"),
          { type: "video_url", video_url: { url: "https://example.com/c.mp4" }, role: "reference_video" }
        ]
      })
    ]
    for (const body of bodies) {
      const created = await call(sim, "POST", TASKS, { ...body, ratio: "adaptive" })
      assert.strictEqual(created.status, 200, JSON.stringify(created.body))
    }
  })

  it("validates like the vendor: 400 InvalidParameter naming the parameter", async () => {
    const cases: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["content", { content: [image("https://example.com/a.png")] }],
      ["content", { content: [] }],
      ["resolution", { resolution: "4k" }],
      ["ratio", { ratio: "2:1" }],
      ["duration", { duration: 1 }],
      ["duration", { duration: 16 }],
      ["duration", { duration: "5" }],
      ["generate_audio", { generate_audio: "yes" }],
      ["content[1].role", { content: [text("x"), image("https://example.com/a.png", "poster")] }],
      ["content", { content: [text("x"), image("https://example.com/a.png", "last_frame")] }],
      [
        "content",
        {
          content: [
            text("x"),
            image("https://example.com/a.png", "first_frame"),
            image("https://example.com/b.png", "reference_image")
          ]
        }
      ],
      ["content", { content: [text("x"), image("https://example.com/a.png"), image("https://example.com/b.png")] }],
      [
        "content[1].role",
        { content: [text("x"), { type: "video_url", video_url: { url: "https://example.com/c.mp4" } }] }
      ],
      ["content[1].image_url.url", { content: [text("x"), image("not a link", "first_frame")] }],
      ["content[1].type", { content: [text("x"), { type: "draft_task" }] }],
      ["model", { model: "" }]
    ]
    for (const [param, override] of cases) {
      const answer = await call(sim, "POST", TASKS, small("x", override))
      assert.strictEqual(answer.status, 400, JSON.stringify(override))
      assert.strictEqual(answer.body.error.code, "InvalidParameter", JSON.stringify(override))
      assert.strictEqual(answer.body.error.type, "BadRequest")
      assert.strictEqual(answer.body.error.param, param, JSON.stringify(override))
      assert.isString(answer.body.error.message)
    }
    const durations = [2, 15]
    for (const duration of durations) {
      const ok = await call(sim, "POST", TASKS, small("bounds [sim:video-stall]", { duration }))
      assert.strictEqual(ok.status, 200, `duration ${duration}`)
    }
  })

  it("[sim:video-fail] fails, [sim:video-expire] expires, [sim:video-stall] keeps running", async () => {
    const failed = await call(sim, "POST", TASKS, small("a cartoon [sim:video-fail]"))
    const expired = await call(sim, "POST", TASKS, small("slow [sim:video-expire]"))
    const stalled = await call(sim, "POST", TASKS, small("stuck [sim:video-stall]"))
    const fail = (await pollUntil(sim, `${TASKS}/${failed.body.id}`, isFinal)).at(-1)
    assert.strictEqual(fail.status, "failed")
    assert.strictEqual(fail.error.code, "OutputVideoSensitiveContentDetected")
    assert.isString(fail.error.message)
    assert.isUndefined(fail.content)
    assert.isUndefined(fail.usage)
    const expire = (await pollUntil(sim, `${TASKS}/${expired.body.id}`, isFinal)).at(-1)
    assert.strictEqual(expire.status, "expired")
    assert.strictEqual(expire.error.code, "TaskExpired")
    await new Promise((resolve) => setTimeout(resolve, 300))
    const stall = await call(sim, "GET", `${TASKS}/${stalled.body.id}`)
    assert.strictEqual(stall.body.status, "running")
    assert.isNull(stall.body.error)
    const missing = await fetch(`${sim.baseUrl}/sim-files/videos/${failed.body.id}.mp4`)
    assert.strictEqual(missing.status, 404)
  })

  it("[sim:video-404=N]: the first N reads of the task answer 404 as for an unknown task, then it is known", async () => {
    const created = await call(sim, "POST", TASKS, small("not replicated yet [sim:video-404=2]"))
    const path = `${TASKS}/${created.body.id}`
    for (let read = 0; read < 2; read++) {
      const unseen = await call(sim, "GET", path)
      assert.strictEqual(unseen.status, 404)
      assert.strictEqual(unseen.body.error.code, "ResourceNotFound")
    }
    const seen = await call(sim, "GET", path)
    assert.strictEqual(seen.status, 200)
    assert.strictEqual(seen.body.id, created.body.id)
    const task = (await pollUntil(sim, path, isFinal)).at(-1)
    assert.strictEqual(task.status, "succeeded")
  })

  it("auth: 401 in Ark's envelope without the key or with a wrong one", async () => {
    const variants: ReadonlyArray<Record<string, string>> = [{}, { authorization: "Bearer wrong-key" }]
    for (const headers of variants) {
      const answer = await call(sim, "POST", TASKS, small("x"), headers)
      assert.strictEqual(answer.status, 401)
      assert.strictEqual(answer.body.error.code, "AuthenticationError")
      assert.strictEqual(answer.body.error.type, "Unauthorized")
      const get = await call(sim, "GET", `${TASKS}/cgt-1`, undefined, headers)
      assert.strictEqual(get.status, 401)
    }
  })

  it("404 in Ark's envelope for an unknown task or path", async () => {
    const answer = await call(sim, "GET", `${TASKS}/cgt-20990101000000-zzzzz`)
    assert.strictEqual(answer.status, 404)
    assert.strictEqual(answer.body.error.code, "ResourceNotFound")
    assert.strictEqual(answer.body.error.type, "NotFound")
    const other = await call(sim, "GET", "/api/v3/nowhere")
    assert.strictEqual(other.status, 404)
    assert.strictEqual(other.body.error.type, "NotFound")
  })

  it("x-sim-fault forces a status in Ark's envelope, and calls are recorded", async () => {
    sim.clearCalls()
    const answer = await call(sim, "POST", TASKS, small("x"), {
      authorization: `Bearer ${sim.apiKey}`,
      "x-sim-fault": "status=429, retry-after=2"
    })
    assert.strictEqual(answer.status, 429)
    assert.strictEqual(answer.headers.get("retry-after"), "2")
    assert.strictEqual(answer.body.error.code, "RateLimitExceeded")
    assert.strictEqual(answer.body.error.type, "TooManyRequests")
    sim.setFaults({ status: 500 }, 1)
    const forced = await call(sim, "GET", `${TASKS}/cgt-x`)
    assert.strictEqual(forced.status, 500)
    assert.strictEqual(forced.body.error.code, "InternalServiceError")
    const calls = sim.calls()
    assert.deepStrictEqual(
      calls.map((c) => [c.method, c.path]),
      [
        ["POST", TASKS],
        ["GET", `${TASKS}/cgt-x`]
      ]
    )
    assert.strictEqual((calls[0]!.body as Body).model, "seedance-2-0-fast")
  })
})

describe("Ark task lifecycle timing and cancellation", () => {
  // The tasks here run on a clock the test holds and steps, so each phase is seen however slow the host is.
  const TASK_MILLIS = 1000
  let clockMs = Date.now()
  const step = (ms: number) => {
    clockMs += ms
  }
  let slow: RunningSimulator
  beforeAll(async () => {
    slow = await startSimulator({ videoMillis: TASK_MILLIS, videoClock: () => clockMs })
  })
  afterAll(async () => {
    await slow.close()
  })

  it("queued for the first 10%, then running, then succeeded", async () => {
    const created = await call(slow, "POST", TASKS, small("timed", { duration: 2 }))
    const path = `${TASKS}/${created.body.id}`
    const at = async (ms: number) => {
      step(ms)
      return (await call(slow, "GET", path)).body.status
    }
    const statuses = [await at(0), await at(0.1 * TASK_MILLIS - 1), await at(1), await at(0.9 * TASK_MILLIS - 1)]
    assert.deepStrictEqual(statuses, ["queued", "queued", "running", "running"])
    step(1)
    // At the end it stays running until the render is done, then it has succeeded.
    const seen = await pollUntil(slow, path, isFinal)
    assert.isTrue(seen.slice(0, -1).every((t: Body) => t.status === "running"))
    assert.strictEqual(seen.at(-1)?.status, "succeeded")
  })

  it("DELETE cancels a queued task, refuses a running one, deletes a finished one", async () => {
    const queued = await call(slow, "POST", TASKS, small("cancel me"))
    step(0.1 * TASK_MILLIS - 1)
    const cancelled = await call(slow, "DELETE", `${TASKS}/${queued.body.id}`)
    assert.strictEqual(cancelled.status, 200)
    const after = await call(slow, "GET", `${TASKS}/${queued.body.id}`)
    assert.strictEqual(after.body.status, "cancelled")
    step(2 * TASK_MILLIS)
    const still = await call(slow, "GET", `${TASKS}/${queued.body.id}`)
    assert.strictEqual(still.body.status, "cancelled")
    assert.isUndefined(still.body.content)

    const running = await call(slow, "POST", TASKS, small("running [sim:video-stall]"))
    step(0.1 * TASK_MILLIS)
    assert.strictEqual((await call(slow, "GET", `${TASKS}/${running.body.id}`)).body.status, "running")
    const refused = await call(slow, "DELETE", `${TASKS}/${running.body.id}`)
    assert.strictEqual(refused.status, 409)
    assert.isString(refused.body.error.code)

    const deleted = await call(slow, "DELETE", `${TASKS}/${queued.body.id}`)
    assert.strictEqual(deleted.status, 200)
    const gone = await call(slow, "GET", `${TASKS}/${queued.body.id}`)
    assert.strictEqual(gone.status, 404)
  })

  it("lists tasks newest first with a status filter", async () => {
    const list = await call(slow, "GET", `${TASKS}?page_size=100&filter.status=running`)
    assert.strictEqual(list.status, 200)
    assert.isAtLeast(list.body.total, 1)
    assert.isTrue(list.body.items.every((t: Body) => t.status === "running"))
  })
})
