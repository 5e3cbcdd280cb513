import { assert, describe, it } from "@effect/vitest"
import { Redacted, Result } from "effect"
import type { UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import type { VideoRequest } from "../../../src/domain/video/VideoSpec.ts"
import type { PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { arkCreateBody, arkStatus, arkTaskId } from "../../../src/plugins/video/ArkTasks.ts"
import {
  openAiVideoStatus,
  openAiVideosCreateBody,
  openAiVideosRefusal
} from "../../../src/plugins/video/OpenAiVideos.ts"
import { videoPricing } from "../../../src/plugins/video/VideoPricing.ts"

const request = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  prompt: "a fox in the snow",
  seconds: 5,
  resolution: "720p",
  ratio: "16:9",
  inputType: "text_to_video",
  images: [],
  videos: [],
  ...overrides
})

const upstream: UpstreamConfig = {
  name: "ark-1",
  protocol: "ark",
  baseUrl: "http://127.0.0.1:1/api/v3",
  apiKey: Redacted.make("k"),
  timeoutMs: 1000,
  idleTimeoutMs: 1000,
  maxConnections: 1
}

const model = (output: bigint): PluginModel => ({
  id: "video-model-2.0",
  upstreams: [upstream],
  upstreamModel: "seedance-2-0",
  pricing: makeModelPricing({ output }),
  maxOutputTokens: 4096
})

const ok = <A, E>(result: Result.Result<A, E>): A => Result.getOrThrow(result)

describe("Ark create bodies", () => {
  it("sends text only for text_to_video, with the parameters as top-level fields", () => {
    assert.deepStrictEqual(arkCreateBody(request(), "seedance-2-0"), {
      model: "seedance-2-0",
      content: [{ type: "text", text: "a fox in the snow" }],
      resolution: "720p",
      ratio: "16:9",
      duration: 5,
      generate_audio: true,
      watermark: false
    })
  })

  it("puts first and last frames in their roles after the text", () => {
    const body = arkCreateBody(
      request({ inputType: "first_last_frame", images: ["https://x/a.png", "https://x/b.png"] }),
      "m"
    )
    assert.deepStrictEqual(body.content, [
      { type: "text", text: "a fox in the snow" },
      { type: "image_url", image_url: { url: "https://x/a.png" }, role: "first_frame" },
      { type: "image_url", image_url: { url: "https://x/b.png" }, role: "last_frame" }
    ])
  })

  it("sends reference images and clips in their roles", () => {
    const body = arkCreateBody(
      request({ inputType: "reference", images: ["https://x/a.png", "https://x/b.png"], videos: ["https://x/c.mp4"] }),
      "m"
    )
    assert.deepStrictEqual(body.content, [
      { type: "text", text: "a fox in the snow" },
      { type: "image_url", image_url: { url: "https://x/a.png" }, role: "reference_image" },
      { type: "image_url", image_url: { url: "https://x/b.png" }, role: "reference_image" },
      { type: "video_url", video_url: { url: "https://x/c.mp4" }, role: "reference_video" }
    ])
  })

  it("sends one reference image alone as the first frame (the vendor's image-to-video mode)", () => {
    const body = arkCreateBody(request({ inputType: "reference", images: ["https://x/a.png"] }), "m")
    assert.deepStrictEqual(body.content, [
      { type: "text", text: "a fox in the snow" },
      { type: "image_url", image_url: { url: "https://x/a.png" }, role: "first_frame" }
    ])
    const withClip = arkCreateBody(
      request({ inputType: "reference", images: ["https://x/a.png"], videos: ["https://x/c.mp4"] }),
      "m"
    )
    assert.strictEqual((withClip.content as ReadonlyArray<{ role?: string }>)[1]?.role, "reference_image")
  })
})

describe("Ark task states", () => {
  it("maps queued and running to pending with synthesized progress", () => {
    assert.deepStrictEqual(ok(arkStatus({ id: "t", status: "queued" })), {
      _tag: "Pending",
      status: "queued",
      progress: 0
    })
    assert.deepStrictEqual(ok(arkStatus({ id: "t", status: "running" })), {
      _tag: "Pending",
      status: "in_progress",
      progress: 50
    })
  })

  it("maps succeeded to the video link and reported tokens", () => {
    assert.deepStrictEqual(
      ok(
        arkStatus({
          status: "succeeded",
          content: { video_url: "https://tos/x.mp4?sig=1" },
          usage: { completion_tokens: 108900, total_tokens: 108900 }
        })
      ),
      { _tag: "Succeeded", videoUrl: "https://tos/x.mp4?sig=1", completionTokens: 108900 }
    )
    assert.deepStrictEqual(ok(arkStatus({ status: "succeeded", content: { video_url: "https://tos/x.mp4" } })), {
      _tag: "Succeeded",
      videoUrl: "https://tos/x.mp4",
      completionTokens: null
    })
  })

  it("maps failed, cancelled and expired with the vendor's error", () => {
    assert.deepStrictEqual(
      ok(arkStatus({ status: "failed", error: { code: "OutputVideoSensitiveContentDetected", message: "no" } })),
      { _tag: "Failed", reason: "failed", code: "OutputVideoSensitiveContentDetected", message: "no" }
    )
    const cancelled = ok(arkStatus({ status: "cancelled", error: null }))
    assert.strictEqual(cancelled._tag === "Failed" && cancelled.reason, "cancelled")
    const expired = ok(arkStatus({ status: "expired" }))
    assert.strictEqual(expired._tag === "Failed" && expired.reason, "expired")
  })

  it("answers 502 for bodies that are not a task", () => {
    for (const body of [null, "x", [], { status: "dancing" }, { status: "succeeded", content: {} }, {}]) {
      const result = arkStatus(body)
      assert.isTrue(Result.isFailure(result) && result.failure.reason === "unavailable", JSON.stringify(body))
    }
    assert.isTrue(Result.isFailure(arkTaskId({ id: 7 })))
    assert.strictEqual(ok(arkTaskId({ id: "cgt-1" })), "cgt-1")
  })
})

describe("OpenAI videos", () => {
  it("sends JSON with seconds as a string and the size from the pixel table", () => {
    assert.deepStrictEqual(openAiVideosCreateBody(request({ ratio: "9:16", seconds: 8 }), "sora-2"), {
      model: "sora-2",
      prompt: "a fox in the snow",
      seconds: "8",
      size: "720x1280"
    })
    assert.deepStrictEqual(
      openAiVideosCreateBody(request({ inputType: "reference", images: ["https://x/a.png"] }), "sora-2")
        .input_reference,
      { image_url: "https://x/a.png" }
    )
  })

  it("refuses what the API cannot express", () => {
    assert.isUndefined(openAiVideosRefusal(request(), "oa"))
    assert.isUndefined(openAiVideosRefusal(request({ inputType: "reference", images: ["https://x/a.png"] }), "oa"))
    for (const refused of [
      request({ inputType: "first_last_frame", images: ["https://x/a.png", "https://x/b.png"] }),
      request({ inputType: "reference", images: ["https://x/a.png", "https://x/b.png"] }),
      request({ inputType: "reference", videos: ["https://x/c.mp4"] })
    ]) {
      const failure = openAiVideosRefusal(refused, "oa")
      assert.strictEqual(failure?.reason, "invalid_request")
      assert.include(failure?.message, "oa")
    }
  })

  it("maps video objects", () => {
    const url = "http://h/v1/videos/v1/content?variant=video"
    assert.deepStrictEqual(ok(openAiVideoStatus({ status: "in_progress", progress: 42 }, url)), {
      _tag: "Pending",
      status: "in_progress",
      progress: 42
    })
    assert.deepStrictEqual(ok(openAiVideoStatus({ status: "queued", progress: null }, url)), {
      _tag: "Pending",
      status: "queued",
      progress: 0
    })
    assert.deepStrictEqual(ok(openAiVideoStatus({ status: "completed", progress: 100 }, url)), {
      _tag: "Succeeded",
      videoUrl: url,
      completionTokens: null
    })
    assert.deepStrictEqual(
      ok(openAiVideoStatus({ status: "failed", error: { code: "moderation_blocked", message: "m" } }, url)),
      { _tag: "Failed", reason: "failed", code: "moderation_blocked", message: "m" }
    )
    assert.isTrue(Result.isFailure(openAiVideoStatus({ status: "done" }, url)))
  })
})

describe("video pricing", () => {
  it("holds the formula's tokens at the output price", () => {
    // 720p 16:9 5 s = 108 900 tokens; at USD 2.50 per 1M = 0.27225 → 272 250 micros.
    assert.strictEqual(videoPricing.estimate(request(), model(2_500_000n)), 272_250n)
    // 1080p 16:9 15 s = 1920 × 1088 × 361 / 1024 = 736 440 tokens; at 1.40 per 1M = 1 031 016 micros.
    assert.strictEqual(
      videoPricing.estimate(request({ resolution: "1080p", seconds: 15 }), model(1_400_000n)),
      1_031_016n
    )
  })

  it("prices usage, rounding up to the micro-dollar", () => {
    assert.strictEqual(videoPricing.price({ tokens: 108_900n, reported: true }, model(2_500_000n)), 272_250n)
    assert.strictEqual(videoPricing.price({ tokens: 1n, reported: false }, model(1_400_000n)), 2n)
  })
})
