import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  decide,
  evolve,
  fold,
  type VideoCommand,
  type VideoTaskEvent,
  type VideoTaskState,
  type VideoTaskSubmitted
} from "../../../src/domain/video/VideoTask.ts"

const AT = "2026-11-22T10:00:00.000Z"

const submitted: VideoTaskSubmitted = {
  type: "VideoTaskSubmitted",
  data: {
    taskId: "video_1",
    accountId: "00000000-0000-4000-8000-000000000001",
    keyId: null,
    model: "video-model-2.0-fast",
    plugin: "video",
    holdId: "00000000-0000-4000-8000-000000000002",
    held: "0.152460",
    estimatedTokens: "108900",
    request: {
      prompt: "a fox",
      seconds: 5,
      resolution: "720p",
      ratio: "16:9",
      inputType: "text_to_video",
      images: [],
      videos: []
    },
    idempotencyKey: null,
    requestHash: "h",
    requestId: null,
    deadlineAt: "2026-11-22T10:30:00.000Z",
    at: AT
  }
}

const content = {
  key: "videos/video_1.mp4",
  bytes: 1000,
  contentType: "video/mp4",
  width: 1280,
  height: 720,
  durationMs: 5000,
  hasAudio: true
}

const given = (...events: ReadonlyArray<VideoTaskEvent>) => fold([submitted, ...events]) as VideoTaskState

const run = (state: VideoTaskState, command: VideoCommand) => {
  const decision = decide(state, command)
  if (decision._tag === "Rejected") return { state, decision }
  return { state: decision.events.reduce<VideoTaskState | undefined>(evolve, state) as VideoTaskState, decision }
}

const dispatched: VideoTaskEvent = {
  type: "VideoTaskDispatched",
  data: { taskId: "video_1", upstreamTaskId: "cgt-1", upstreamIndex: 0, at: AT }
}

describe("VideoTask", () => {
  it("a submitted task is queued at 0% with version 1", () => {
    const state = given()
    assert.strictEqual(state.status, "queued")
    assert.strictEqual(state.progress, 0)
    assert.strictEqual(state.version, 1n)
  })

  it("is dispatched once", () => {
    const once = run(given(), { type: "Dispatch", upstreamTaskId: "cgt-1", upstreamIndex: 0, at: AT })
    assert.deepStrictEqual(once.state.upstream, { taskId: "cgt-1", index: 0 })
    const twice = decide(once.state, { type: "Dispatch", upstreamTaskId: "cgt-2", upstreamIndex: 0, at: AT })
    assert.deepStrictEqual(twice, { _tag: "Rejected", rejection: { _tag: "AlreadyDispatched" } })
  })

  it("cannot complete before it was dispatched", () => {
    const decision = decide(given(), {
      type: "Complete",
      tokens: 1n,
      tokensReported: true,
      cost: "0.000001",
      content,
      expiresAt: AT,
      at: AT
    })
    assert.deepStrictEqual(decision, { _tag: "Rejected", rejection: { _tag: "NotDispatched" } })
  })

  it("completes at 100% with its usage, content and expiry, and then nothing moves it but content expiry", () => {
    const done = run(given(dispatched), {
      type: "Complete",
      tokens: 108900n,
      tokensReported: true,
      cost: "0.152460",
      content,
      expiresAt: "2026-11-29T10:00:00.000Z",
      at: AT
    }).state
    assert.strictEqual(done.status, "completed")
    assert.strictEqual(done.progress, 100)
    assert.strictEqual(done.tokens, "108900")
    assert.strictEqual(done.expiresAt, "2026-11-29T10:00:00.000Z")
    assert.deepStrictEqual(decide(done, { type: "Fail", reason: "failed", code: "x", message: "y", at: AT }), {
      _tag: "Rejected",
      rejection: { _tag: "TaskFinished", status: "completed" }
    })
    const expired = run(done, { type: "ExpireContent", at: AT })
    assert.strictEqual(expired.state.contentExpiredAt, AT)
    // Expiring twice records nothing new.
    assert.deepStrictEqual(decide(expired.state, { type: "ExpireContent", at: AT }), { _tag: "Accepted", events: [] })
  })

  it("a failed task keeps its error and refuses content expiry", () => {
    const failed = run(given(), { type: "Fail", reason: "expired", code: "deadline_exceeded", message: "m", at: AT })
    assert.strictEqual(failed.state.status, "failed")
    assert.deepStrictEqual(failed.state.error, { reason: "expired", code: "deadline_exceeded", message: "m" })
    assert.deepStrictEqual(decide(failed.state, { type: "ExpireContent", at: AT }), {
      _tag: "Rejected",
      rejection: { _tag: "NoContent" }
    })
  })

  const command: fc.Arbitrary<VideoCommand> = fc.oneof(
    fc.record({
      type: fc.constant("ReportProgress" as const),
      status: fc.constantFrom("queued" as const, "in_progress" as const),
      progress: fc.integer({ min: -10, max: 150 }),
      at: fc.constant(AT)
    }),
    fc.constant<VideoCommand>({ type: "Dispatch", upstreamTaskId: "cgt-1", upstreamIndex: 0, at: AT }),
    fc.constant<VideoCommand>({
      type: "Complete",
      tokens: 5n,
      tokensReported: false,
      cost: "0.000007",
      content,
      expiresAt: AT,
      at: AT
    }),
    fc.constant<VideoCommand>({ type: "Fail", reason: "failed", code: "c", message: "m", at: AT }),
    fc.constant<VideoCommand>({ type: "ExpireContent", at: AT })
  )

  it("property: progress never goes back, stays in 0..100, a task finishes at most once, and the fold agrees", () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 40 }), (commands) => {
        let state = given()
        const history: Array<VideoTaskEvent> = [submitted]
        let finishes = 0
        for (const c of commands) {
          const before = state
          const decision = decide(state, c)
          if (decision._tag === "Accepted") {
            history.push(...decision.events)
            finishes += decision.events.filter(
              (e) => e.type === "VideoTaskCompleted" || e.type === "VideoTaskFailed"
            ).length
            state = decision.events.reduce<VideoTaskState | undefined>(evolve, state) as VideoTaskState
          }
          assert.isAtLeast(state.progress, before.progress)
          assert.isAtMost(state.progress, 100)
          assert.isAtLeast(state.progress, 0)
        }
        assert.isAtMost(finishes, 1)
        assert.deepStrictEqual(fold(history), state)
        assert.strictEqual(state.version, BigInt(history.length))
      })
    )
  })
})
