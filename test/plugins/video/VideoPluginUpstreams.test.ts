/**
 * The video plugin against scripted local upstreams: fallback, failure mapping and downloads, where the exact status
 * and headers matter. The end-to-end flow against the simulator is in VideoPlugin.test.ts.
 */
import type { ServerResponse } from "node:http"
import { createServer as createNetServer } from "node:net"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { UpstreamClient } from "../../../src/adapters/upstream/UpstreamClient.ts"
import type { UpstreamConfig } from "../../../src/app/OperatorConfig.ts"
import { makeModelPricing } from "../../../src/app/config/ModelPricing.ts"
import type { VideoRequest } from "../../../src/domain/video/VideoSpec.ts"
import type { PluginFailure, PluginModel, VideoTaskRef } from "../../../src/plugins/ModelPlugin.ts"
import { makeGuardedFetcher } from "../../../src/adapters/fetch/GuardedFetcher.ts"
import { VIDEO_LINK_REFUSED } from "../../../src/plugins/video/LinkDownload.ts"
import { makeVideoPlugin } from "../../../src/plugins/video/VideoPlugin.ts"
import { API_KEY, localServer, upstreamAt } from "../../adapters/upstream/LocalServer.ts"

const provideClient = Effect.provide(UpstreamClient.layer)

const pluginWith = (allowHosts: ReadonlyArray<string>) =>
  Effect.map(Effect.service(UpstreamClient), (client) => makeVideoPlugin(client, makeGuardedFetcher({ allowHosts })))

const plugin = pluginWith([])

const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(typeof body === "string" ? body : JSON.stringify(body))
}

/** A port nothing listens on. */
const closedPort = Effect.callback<number>((resume) => {
  const server = createNetServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

const request = (overrides: Partial<VideoRequest> = {}): VideoRequest => ({
  prompt: "a lighthouse at dusk",
  seconds: 5,
  resolution: "480p",
  ratio: "16:9",
  inputType: "text_to_video",
  images: [],
  videos: [],
  ...overrides
})

const modelOn = (upstreams: ReadonlyArray<UpstreamConfig>): PluginModel => ({
  id: "video-test",
  upstreams,
  upstreamModel: "seedance-2-0",
  pricing: makeModelPricing({ output: 2_500_000n }),
  maxOutputTokens: 4096
})

const call = (model: PluginModel, overrides: Partial<VideoRequest> = {}) => ({
  model,
  request: request(overrides),
  taskId: "video_test",
  signal: new AbortController().signal
})

const taskOn = (model: PluginModel, upstreamTaskId = "cgt-1", upstreamIndex = 0): VideoTaskRef => ({
  ...call(model),
  upstreamTaskId,
  upstreamIndex
})

const failureOf = <A>(exit: Exit.Exit<A, PluginFailure>): PluginFailure => {
  if (Exit.isSuccess(exit)) throw new Error("expected a failure")
  const failure = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (failure === undefined || failure._tag !== "Fail") throw new Error(`expected a PluginFailure: ${exit.cause}`)
  return failure.error
}

const collect = (body: AsyncIterable<Uint8Array>) =>
  Effect.promise(async () => {
    // An edge: the body is a plain async iterable.
    const parts: Array<Uint8Array> = []
    for await (const part of body) parts.push(part)
    return Buffer.concat(parts)
  })

describe("video plugin: create", () => {
  it.live("falls back to the next upstream when the first refuses connections", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const server = yield* localServer((_, response) => json(response, 200, { id: "cgt-2" }))
      const video = yield* plugin
      const model = modelOn([
        upstreamAt(`http://127.0.0.1:${port}/api/v3`, { protocol: "ark", name: "down" }),
        upstreamAt(`${server.origin}/api/v3`, { protocol: "ark", name: "up" })
      ])
      const created = yield* video.create(call(model))
      assert.deepStrictEqual(created, { upstreamTaskId: "cgt-2", upstreamIndex: 1 })
      const seen = server.requests[0]
      assert.strictEqual(seen?.url, "/api/v3/contents/generations/tasks")
      assert.strictEqual(seen?.headers.authorization, `Bearer ${API_KEY}`)
      assert.strictEqual(JSON.parse(seen?.body ?? "{}").model, "seedance-2-0")
    }).pipe(provideClient)
  )

  it.live("falls back on 429 and 5xx, but not on a 400", () =>
    Effect.gen(function* () {
      const busy = yield* localServer((_, response) =>
        json(response, 429, { error: { code: "RateLimitExceeded", message: "slow down" } }, { "retry-after": "3" })
      )
      const bad = yield* localServer((_, response) =>
        json(response, 400, { error: { code: "InvalidParameter", message: "ratio", param: "ratio" } })
      )
      const failing = yield* localServer((_, response) =>
        json(response, 500, { error: { code: "InternalServiceError", message: "oops" } })
      )
      const good = yield* localServer((_, response) => json(response, 200, { id: "cgt-3" }))
      const video = yield* plugin
      const ark = (origin: string, name: string) => upstreamAt(`${origin}/api/v3`, { protocol: "ark", name })
      const three = modelOn([ark(busy.origin, "a"), ark(failing.origin, "b"), ark(good.origin, "c")])
      assert.deepStrictEqual(yield* video.create(call(three)), { upstreamTaskId: "cgt-3", upstreamIndex: 2 })
      const refused = failureOf(
        yield* Effect.exit(video.create(call(modelOn([ark(bad.origin, "a"), ark(good.origin, "b")]))))
      )
      assert.strictEqual(refused.reason, "invalid_request")
      assert.include(refused.message, "ratio")
      assert.strictEqual(good.requests.length, 1)
      const allBusy = failureOf(yield* Effect.exit(video.create(call(modelOn([ark(busy.origin, "a")])))))
      assert.strictEqual(allBusy.reason, "rate_limited")
      assert.strictEqual(allBusy.retryAfterSeconds, 3)
    }).pipe(provideClient)
  )

  it.live("refuses first_last_frame on an openai-videos upstream before any call, or skips it for one that can", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) => json(response, 200, { id: "cgt-9" }))
      const video = yield* plugin
      const openai = upstreamAt(`${server.origin}/v1`, { protocol: "openai-videos", name: "sora" })
      const frames = { inputType: "first_last_frame", images: ["https://x/a.png", "https://x/b.png"] } as const
      const refused = failureOf(yield* Effect.exit(video.create(call(modelOn([openai]), frames))))
      assert.strictEqual(refused.reason, "invalid_request")
      assert.include(refused.message, "sora")
      assert.strictEqual(server.requests.length, 0)
      const ark = upstreamAt(`${server.origin}/api/v3`, { protocol: "ark", name: "ark" })
      assert.deepStrictEqual(yield* video.create(call(modelOn([openai, ark]), frames)), {
        upstreamTaskId: "cgt-9",
        upstreamIndex: 1
      })
      assert.strictEqual(server.requests[0]?.url, "/api/v3/contents/generations/tasks")
    }).pipe(provideClient)
  )

  it.live("sends openai-videos JSON to /videos and takes the video object's id", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) =>
        json(response, 200, { id: "video_1", object: "video", status: "queued", progress: 0 })
      )
      const video = yield* plugin
      const model = modelOn([upstreamAt(`${server.origin}/v1`, { protocol: "openai-videos" })])
      const created = yield* video.create(call(model, { inputType: "reference", images: ["https://x/a.png"] }))
      assert.deepStrictEqual(created, { upstreamTaskId: "video_1", upstreamIndex: 0 })
      assert.strictEqual(server.requests[0]?.url, "/v1/videos")
      assert.deepStrictEqual(JSON.parse(server.requests[0]?.body ?? "{}"), {
        model: "seedance-2-0",
        prompt: "a lighthouse at dusk",
        seconds: "5",
        size: "864x496",
        input_reference: { image_url: "https://x/a.png" }
      })
    }).pipe(provideClient)
  )

  it.live("answers 502 for a create answer without an id, and does not try another upstream", () =>
    Effect.gen(function* () {
      const broken = yield* localServer((_, response) => json(response, 200, "{not json"))
      const good = yield* localServer((_, response) => json(response, 200, { id: "cgt-x" }))
      const video = yield* plugin
      const ark = (origin: string) => upstreamAt(`${origin}/api/v3`, { protocol: "ark" })
      const failure = failureOf(yield* Effect.exit(video.create(call(modelOn([ark(broken.origin), ark(good.origin)])))))
      assert.strictEqual(failure.reason, "unavailable")
      assert.strictEqual(good.requests.length, 0)
    }).pipe(provideClient)
  )
})

describe("video plugin: poll", () => {
  it.live("polls the upstream that took the task and maps its failures", () =>
    Effect.gen(function* () {
      const script: Array<(response: ServerResponse) => void> = [
        (r) => json(r, 200, { id: "cgt-1", status: "running" }),
        (r) => json(r, 429, { error: { code: "RateLimitExceeded", message: "later" } }, { "retry-after": "7" }),
        (r) => json(r, 500, { error: { code: "InternalServiceError", message: "oops" } }, { "retry-after": "2" }),
        (r) => json(r, 404, { error: { code: "ResourceNotFound", message: "gone" } }),
        (r) => json(r, 200, "<html>"),
        (r) => json(r, 200, { id: "cgt-1", status: "succeeded", content: {} })
      ]
      const server = yield* localServer((_, response) => script.shift()?.(response))
      const video = yield* plugin
      const model = modelOn([
        upstreamAt("http://127.0.0.1:1/api/v3", { protocol: "ark", name: "other" }),
        upstreamAt(`${server.origin}/api/v3`, { protocol: "ark" })
      ])
      const task = taskOn(model, "cgt-1", 1)
      assert.deepStrictEqual(yield* video.poll(task), { _tag: "Pending", status: "in_progress", progress: 50 })
      assert.strictEqual(server.requests[0]?.url, "/api/v3/contents/generations/tasks/cgt-1")
      assert.strictEqual(server.requests[0]?.method, "GET")
      const limited = failureOf(yield* Effect.exit(video.poll(task)))
      assert.deepStrictEqual([limited.reason, limited.retryAfterSeconds], ["rate_limited", 7])
      const broken = failureOf(yield* Effect.exit(video.poll(task)))
      assert.deepStrictEqual([broken.reason, broken.retryAfterSeconds], ["unavailable", 2])
      const missing = yield* video.poll(task)
      assert.strictEqual(missing._tag, "Failed")
      assert.deepStrictEqual(missing._tag === "Failed" && [missing.reason, missing.code], [
        "expired",
        "upstream_task_missing"
      ])
      assert.strictEqual(failureOf(yield* Effect.exit(video.poll(task))).reason, "unavailable")
      assert.strictEqual(failureOf(yield* Effect.exit(video.poll(task))).reason, "unavailable")
      assert.strictEqual(failureOf(yield* Effect.exit(video.poll(taskOn(model, "cgt-1", 5)))).reason, "misconfigured")
    }).pipe(provideClient)
  )

  it.live("gives the openai-videos content path as the video link once completed", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_, response) =>
        json(response, 200, { id: "video_1", object: "video", status: "completed", progress: 100, error: null })
      )
      const video = yield* plugin
      const model = modelOn([upstreamAt(`${server.origin}/v1`, { protocol: "openai-videos" })])
      assert.deepStrictEqual(yield* video.poll(taskOn(model, "video_1")), {
        _tag: "Succeeded",
        videoUrl: `${server.origin}/v1/videos/video_1/content?variant=video`,
        completionTokens: null
      })
      assert.strictEqual(server.requests[0]?.url, "/v1/videos/video_1")
    }).pipe(provideClient)
  )
})

describe("video plugin: download", () => {
  const payload = Buffer.alloc(300_000, 7)

  it.live("streams an Ark link without the API key", () =>
    Effect.gen(function* () {
      const files = yield* localServer((request, response) => {
        if (request.url?.startsWith("/bucket/clip.mp4?X-Tos-Signature=")) {
          response.writeHead(200, { "content-type": "video/mp4", "content-length": String(payload.length) })
          response.end(payload)
        } else json(response, 403, { error: "signature mismatch" })
      })
      // The file server stands for a public object store: loopback, so allow-listed.
      const video = yield* pluginWith(["127.0.0.1"])
      const model = modelOn([upstreamAt("http://127.0.0.1:1/api/v3", { protocol: "ark" })])
      const download = yield* video.download(taskOn(model), `${files.origin}/bucket/clip.mp4?X-Tos-Signature=abc`)
      assert.strictEqual(download.contentType, "video/mp4")
      assert.strictEqual(download.contentLength, payload.length)
      assert.isTrue((yield* collect(download.body)).equals(payload))
      assert.isUndefined(files.requests[0]?.headers.authorization)
      const expired = failureOf(yield* Effect.exit(video.download(taskOn(model), `${files.origin}/bucket/old.mp4`)))
      assert.strictEqual(expired.reason, "unavailable")
      assert.include(expired.message, "403")
      const notHttp = failureOf(yield* Effect.exit(video.download(taskOn(model), "file:///etc/passwd")))
      assert.strictEqual(notHttp.reason, "unavailable")
      assert.strictEqual(notHttp.code, VIDEO_LINK_REFUSED)
    }).pipe(provideClient)
  )

  it.live(
    "goes through the guard: a link to a private address is refused for good, the upstream's origin is trusted",
    () =>
      Effect.gen(function* () {
        const files = yield* localServer((_request, response) => {
          response.writeHead(200, { "content-type": "video/mp4", "content-length": String(payload.length) })
          response.end(payload)
        })
        const video = yield* plugin
        const elsewhere = modelOn([upstreamAt("http://127.0.0.1:1/api/v3", { protocol: "ark" })])
        const refused = failureOf(
          yield* Effect.exit(video.download(taskOn(elsewhere), `${files.origin}/bucket/clip.mp4`))
        )
        assert.strictEqual(refused.code, VIDEO_LINK_REFUSED)
        assert.match(refused.message, /127\.0\.0\.1 is a loopback address/)
        for (const link of ["http://169.254.169.254/latest/clip.mp4", "http://[::ffff:10.0.0.1]/clip.mp4"]) {
          const blocked = failureOf(yield* Effect.exit(video.download(taskOn(elsewhere), link)))
          assert.strictEqual(blocked.code, VIDEO_LINK_REFUSED, link)
        }
        assert.strictEqual(files.requests.length, 0)
        // A link on the origin of the upstream that handed it out: the operator configured that host.
        const own = modelOn([upstreamAt(`${files.origin}/api/v3`, { protocol: "ark" })])
        const download = yield* video.download(taskOn(own), `${files.origin}/bucket/clip.mp4`)
        assert.isTrue((yield* collect(download.body)).equals(payload))
      }).pipe(provideClient)
  )

  it.live("downloads openai-videos content through the upstream, with its key", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) => {
        if (request.url === "/v1/videos/video_1/content?variant=video") {
          response.writeHead(200, { "content-type": "video/mp4" })
          response.end(payload)
        } else json(response, 404, { error: { code: "not_found", message: "no such video" } })
      })
      const video = yield* plugin
      const model = modelOn([upstreamAt(`${server.origin}/v1`, { protocol: "openai-videos" })])
      const task = taskOn(model, "video_1")
      const download = yield* video.download(task, `${server.origin}/v1/videos/video_1/content?variant=video`)
      assert.strictEqual(download.contentType, "video/mp4")
      assert.isTrue((yield* collect(download.body)).equals(payload))
      assert.strictEqual(server.requests[0]?.headers.authorization, `Bearer ${API_KEY}`)
      const missing = failureOf(yield* Effect.exit(video.download(taskOn(model, "video_2"), "https://elsewhere/x")))
      assert.strictEqual(server.requests[1]?.url, "/v1/videos/video_2/content?variant=video")
      assert.strictEqual(missing.reason, "unavailable")
    }).pipe(provideClient)
  )
})
