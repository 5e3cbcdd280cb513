import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rejection } from "../../src/cli/commands/VideosClient.ts"
import {
  type ProgressStream,
  ProgressOutput,
  progressDisplay,
  progressLine
} from "../../src/cli/commands/VideosProgress.ts"
import {
  chargeLine,
  formatBytes,
  videoCreateBody,
  videoListView,
  videoTaskView
} from "../../src/cli/commands/VideosView.ts"
import { runCli } from "../../src/cli/runCli.ts"
import { validateVideoSubmit } from "../../src/domain/video/VideoSubmit.ts"
import { FAST, startVideoHarness } from "../http/videos/VideoHarness.ts"
import { probe } from "../support/Ffprobe.ts"
import { closedPort } from "./LocalServer.ts"

const API_KEY = "sk-test-secret-123"
const withKey = { TOLLGATE_API_KEY: API_KEY }

const fakeStream = (isTTY: boolean) => {
  const chunks: Array<string> = []
  const stream: ProgressStream = { isTTY, columns: 100, write: (chunk) => chunks.push(chunk) }
  return { stream, chunks }
}

const expectUsageError = (argv: ReadonlyArray<string>, message: string) =>
  Effect.gen(function* () {
    const result = yield* runCli(argv, withKey)
    assert.strictEqual(result.exitCode, 2, result.stderr)
    assert.include(result.stderr, message)
    assert.strictEqual(result.stdout, "")
  })

describe("videos: request body", () => {
  it("sends seconds as a string and links only when given, in a body the server's validator accepts", () => {
    const body = videoCreateBody({
      prompt: "a fox",
      model: "video-model-2.0-fast",
      seconds: 5,
      resolution: "480p",
      ratio: "9:16",
      images: [],
      videos: []
    })
    assert.deepStrictEqual(body, {
      model: "video-model-2.0-fast",
      prompt: "a fox",
      seconds: "5",
      metadata: { resolution: "480p", ratio: "9:16" }
    })
    const withLinks = videoCreateBody({
      prompt: "frames",
      model: "video-model-2.0",
      seconds: 12,
      resolution: "1080p",
      ratio: "16:9",
      images: ["https://x.example/a.png", "https://x.example/b.jpg"],
      videos: ["https://x.example/c.mp4"]
    })
    assert.deepStrictEqual(withLinks.metadata, {
      resolution: "1080p",
      ratio: "16:9",
      images: ["https://x.example/a.png", "https://x.example/b.jpg"],
      videos: ["https://x.example/c.mp4"]
    })
    const validated = validateVideoSubmit(withLinks)
    assert.strictEqual(validated._tag, "Valid")
    if (validated._tag === "Valid") assert.strictEqual(validated.request.seconds, 12)
  })
})

describe("videos: argument parsing", () => {
  it.live("checks the flags before any request (exit 2)", () =>
    Effect.gen(function* () {
      yield* expectUsageError(["videos", "create"], "Missing required flag: --prompt")
      yield* expectUsageError(["videos", "create", "--prompt", "  "], "a non-blank prompt")
      yield* expectUsageError(["videos", "create", "--prompt", "x", "--seconds", "3"], "from 4 to 15")
      yield* expectUsageError(["videos", "create", "--prompt", "x", "--seconds", "16"], "from 4 to 15")
      yield* expectUsageError(["videos", "create", "--prompt", "x", "--seconds", "4.5"], "--seconds")
      yield* expectUsageError(["videos", "create", "--prompt", "x", "--resolution", "4k"], "--resolution")
      yield* expectUsageError(["videos", "create", "--prompt", "x", "--ratio", "5:4"], "--ratio")
      yield* expectUsageError(
        ["videos", "create", "--prompt", "x", "--image", "data:image/png;base64,AAAA"],
        "inline base64 data: URIs are not supported for video inputs"
      )
      yield* expectUsageError(
        ["videos", "create", "--prompt", "x", "--image", "ftp://x.example/a.png"],
        "an http(s) URL of a JPG, PNG or WebP image"
      )
      yield* expectUsageError(
        ["videos", "create", "--prompt", "x", "--video", "x.example/a.mp4"],
        "an http(s) URL of an MP4 video"
      )
      const tooMany = ["x", "y", "z", "w"].flatMap((name) => ["--video", `https://x.example/${name}.mp4`])
      yield* expectUsageError(["videos", "create", "--prompt", "x", ...tooMany], "at most 3 values")
      yield* expectUsageError(["videos", "create", "--prompt", "x", "--poll-interval", "5"], "at least 100")
      yield* expectUsageError(["videos", "list", "--limit", "0"], "a page size from 1 to 100")
      yield* expectUsageError(["videos", "get"], "Missing required argument: id")
    })
  )

  it.live("needs TOLLGATE_API_KEY, and says so", () =>
    Effect.gen(function* () {
      const result = yield* runCli(["videos", "list"], { TOLLGATE_ADMIN_TOKEN: "admin" })
      assert.strictEqual(result.exitCode, 1)
      assert.include(result.stderr, "error: no API key: set TOLLGATE_API_KEY")
    })
  )

  it.live("explains a server that is down", () =>
    Effect.gen(function* () {
      const port = yield* closedPort
      const result = yield* runCli(["videos", "get", "video_1", "--url", `http://127.0.0.1:${port}`], withKey)
      assert.strictEqual(result.exitCode, 1)
      assert.include(result.stderr, "connection refused")
    })
  )
})

describe("videos: progress", () => {
  it.effect("writes one plain line per change to a non-terminal stream", () =>
    Effect.gen(function* () {
      const { stream, chunks } = fakeStream(false)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const display = yield* progressDisplay("video_1")
          yield* display.update("queued", 0)
          yield* display.update("queued", 0)
          yield* display.update("in_progress", 40.4)
          yield* display.update("in_progress", 40)
          yield* display.update("in_progress", 180)
        })
      ).pipe(Effect.provideService(ProgressOutput, stream))
      assert.deepStrictEqual(chunks, [
        "video_1  queued  0%\n",
        "video_1  in_progress  40%\n",
        "video_1  in_progress  100%\n"
      ])
      assert.strictEqual(progressLine("v", "queued", Number.NaN), "v  queued  0%")
    })
  )

  it.effect("draws a cli-progress bar on a terminal and finishes its line when done", () =>
    Effect.gen(function* () {
      const { stream, chunks } = fakeStream(true)
      yield* Effect.scoped(
        Effect.gen(function* () {
          const display = yield* progressDisplay("video_2")
          yield* display.update("in_progress", 50)
        })
      ).pipe(Effect.provideService(ProgressOutput, stream))
      const output = chunks.join("")
      assert.include(output, "video_2")
      assert.include(output, "█")
      assert.include(output, "in_progress")
      assert.isTrue(output.endsWith("\n"))
    })
  )
})

describe("videos: views and errors", () => {
  const task = {
    id: "video_1",
    model: "video-model-2.0-fast",
    status: "completed",
    progress: 100,
    created_at: 1_795_000_000,
    completed_at: 1_795_000_090,
    expires_at: 1_795_604_890,
    seconds: "5",
    metadata: {
      url: "http://127.0.0.1:8080/v1/videos/video_1/content",
      resolution: "720p",
      ratio: "16:9",
      input_type: "text_to_video"
    },
    error: null,
    charge: { held: "0.152460", captured: "0.150000", refunded: "0.002460" }
  }

  it("prints the final charge", () => {
    assert.strictEqual(chargeLine(task.charge), "charged 0.150000 (held 0.152460, refunded 0.002460)")
    assert.strictEqual(chargeLine({ held: "0.1", captured: null, refunded: null }), "held 0.1 (not settled yet)")
    assert.isUndefined(chargeLine(undefined))
  })

  it("shows a task and a list", () => {
    const view = videoTaskView(task)
    assert.include(view, "status      completed")
    assert.include(view, "created     2026-11-18T")
    assert.include(view, "charge      charged 0.150000")
    assert.notInclude(view, "error")
    const failed = videoTaskView({ ...task, status: "failed", error: { message: "no clear subject", code: "failed" } })
    assert.include(failed, "error       no clear subject (failed)")
    const list = videoListView({ data: [task], has_more: true, last_id: "video_1" })
    assert.match(list, /^ID\s+MODEL\s+STATUS\s+PROGRESS\s+SECONDS\s+CHARGED\s+CREATED/)
    assert.include(list, "More: tollgate videos list --after video_1")
    assert.include(videoListView({ data: [] }), "No videos yet")
    assert.strictEqual(formatBytes(512), "512 B")
    assert.strictEqual(formatBytes(3 * 1024 * 1024 + 100), "3.0 MiB")
  })

  it("reads the server's OpenAI error envelope", () => {
    const body = JSON.stringify({
      error: { message: "seconds: expected 4 to 15", type: "invalid_request_error", param: "seconds", code: "x" }
    })
    assert.strictEqual(rejection("http://h", 400, body).message, "seconds: expected 4 to 15 (HTTP 400, x)")
    assert.include(rejection("http://h", 401, body).message, "TOLLGATE_API_KEY was refused")
    assert.include(rejection("http://h", 502, "<html>bad gateway</html>").message, "<html>bad gateway</html>")
  })
})

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "tollgate-videos-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

/** The real gateway on the embedded store, its video models on a simulator that renders real MP4s in ~0.3 s. */
const harness = Effect.acquireRelease(
  Effect.promise(() => startVideoHarness()),
  (h) => Effect.promise(() => h.close())
)

describe("videos: against a real gateway", () => {
  it.live(
    "create --wait follows the task, downloads the MP4 and prints the path, size and the charge from the ledger",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const h = yield* harness
          const customer = yield* Effect.promise(() => h.admin.customer())
          const dir = yield* tempDir
          const out = join(dir, "clip.mp4")
          const { stream, chunks } = fakeStream(false)
          const result = yield* runCli(
            [
              "videos",
              "create",
              "--prompt",
              "a fox in the snow",
              "--model",
              FAST,
              "--seconds",
              "4",
              "--resolution",
              "480p",
              "--wait",
              "--out",
              out,
              "--poll-interval",
              "100",
              "--url",
              h.gateway.url
            ],
            { TOLLGATE_API_KEY: customer.key }
          ).pipe(Effect.provideService(ProgressOutput, stream))
          assert.strictEqual(result.exitCode, 0, result.stderr)
          const lines = result.stdout.trim().split("\n")
          assert.match(lines[0], /^video_[0-9a-f]{32}$/)
          assert.match(lines[1], new RegExp(`^saved ${out.replaceAll("/", "\\/")} \\(.+, \\d+ bytes\\)$`))
          // 480p 16:9 × 4 s = 40,595 tokens at 1.40 per 1M.
          assert.strictEqual(lines[2], "charged 0.056833 (held 0.056833, refunded 0.000000)")
          assert.strictEqual(chunks[chunks.length - 1], `${lines[0]}  completed  100%\n`)
          assert.isFalse(result.stdout.includes(customer.key) || result.stderr.includes(customer.key))
          const info = yield* Effect.promise(() => probe(out))
          assert.deepStrictEqual([info.video.width, info.video.height], [864, 496])
          assert.strictEqual(info.audio?.codec, "aac")
          assert.isFalse(existsSync(`${out}.part`))
          const ledger = yield* Effect.promise(() => h.admin.ledger(customer.accountId))
          assert.deepStrictEqual(
            ledger.filter((e) => e.holdId !== null).map((e) => [e.type, e.amount]),
            [
              ["HoldPlaced", "0.056833"],
              ["UsageRecalculated", "0.056833"]
            ]
          )
        })
      ),
    60_000
  )

  it.live(
    "get and list show the task; a failed task prints its error and exits 1, downloading nothing",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const h = yield* harness
          const customer = yield* Effect.promise(() => h.admin.customer())
          const dir = yield* tempDir
          const out = join(dir, "never.mp4")
          const env = { TOLLGATE_API_KEY: customer.key }
          const failed = yield* runCli(
            [
              "videos",
              "create",
              "--prompt",
              "a cartoon [sim:video-fail]",
              "--model",
              FAST,
              "--seconds",
              "4",
              "--resolution",
              "480p",
              "--out",
              out,
              "--poll-interval",
              "100",
              "--url",
              h.gateway.url
            ],
            env
          ).pipe(Effect.provideService(ProgressOutput, fakeStream(false).stream))
          assert.strictEqual(failed.exitCode, 1, failed.stdout)
          assert.isFalse(existsSync(out))
          const id = failed.stdout.trim().split("\n")[0]
          const shown = yield* runCli(["videos", "get", id, "--url", h.gateway.url], env)
          assert.strictEqual(shown.exitCode, 0, shown.stderr)
          assert.include(shown.stdout, "failed")
          const listed = yield* runCli(["videos", "list", "--json", "--url", h.gateway.url], env)
          assert.strictEqual(JSON.parse(listed.stdout).data[0].id, id)
        })
      ),
    60_000
  )

  it.live(
    "prints the server's error message when the submit is refused",
    () =>
      Effect.scoped(
        Effect.gen(function* () {
          const h = yield* harness
          const customer = yield* Effect.promise(() => h.admin.customer({ deposit: "0.01" }))
          const refused = yield* runCli(
            ["videos", "create", "--prompt", "too dear", "--model", FAST, "--url", h.gateway.url],
            { TOLLGATE_API_KEY: customer.key }
          )
          assert.strictEqual(refused.exitCode, 1)
          assert.include(refused.stderr, "insufficient balance")
        })
      ),
    60_000
  )
})
