import { assert, describe, it } from "@effect/vitest"
import { makeVideoJobs, phaseOf, type VideoJobInput } from "../../../../src/adapters/simulator/video/VideoJobs.ts"
import type { RenderedFile, VideoRenderer } from "../../../../src/adapters/simulator/video/VideoRender.ts"

/** A renderer whose files appear when the test says so. */
const manualRenderer = () => {
  const pending: Array<(file: RenderedFile) => void> = []
  const renderer: VideoRenderer = {
    render: () => new Promise((resolve) => pending.push(resolve)),
    close: () => Promise.resolve()
  }
  return { renderer, finish: () => pending.shift()?.({ path: "/tmp/clip.mp4", bytes: 10 }) }
}

const input = (outcome: VideoJobInput["outcome"]): VideoJobInput => ({
  api: "ark",
  model: "m",
  prompt: "p",
  spec: { width: 64, height: 64, seconds: 2, audio: true },
  outcome,
  echo: {}
})

const flush = () => new Promise((resolve) => setTimeout(resolve, 0))

describe("video job phases", () => {
  it("queued for the first 10%, running with a rising fraction, succeeded once both the time and the file are there", async () => {
    let now = 1_000_000
    const { renderer, finish } = manualRenderer()
    const jobs = makeVideoJobs({ videoMillis: 1000, baseUrl: () => "http://sim", renderer, now: () => now })
    const job = jobs.submit(input("succeed"))
    assert.match(job.id, /^cgt-\d{14}-\w{5}$/)
    assert.strictEqual(phaseOf(job, now)._tag, "Queued")
    assert.strictEqual(phaseOf(job, now + 99)._tag, "Queued")
    assert.deepInclude(phaseOf(job, now + 100), { _tag: "Running", fraction: 0.1, sinceMs: now + 100 })
    assert.deepInclude(phaseOf(job, now + 500), { _tag: "Running", fraction: 0.5 })
    // The time is up but the file is not there yet.
    assert.strictEqual(phaseOf(job, now + 1000)._tag, "Running")
    now += 1200
    finish()
    await flush()
    assert.deepStrictEqual(phaseOf(job, now), {
      _tag: "Succeeded",
      atMs: now,
      file: { path: "/tmp/clip.mp4", bytes: 10 }
    })
  })

  it("markers decide the end; a cancelled task stays cancelled", () => {
    const now = 5_000
    const { renderer } = manualRenderer()
    const jobs = makeVideoJobs({ videoMillis: 1000, baseUrl: () => "http://sim", renderer, now: () => now })
    assert.deepInclude(phaseOf(jobs.submit(input("fail")), now + 1000), { _tag: "Failed", cause: "marker" })
    assert.deepStrictEqual(phaseOf(jobs.submit(input("expire")), now + 1000), { _tag: "Expired", atMs: now + 1000 })
    assert.strictEqual(phaseOf(jobs.submit(input("stall")), now + 1_000_000)._tag, "Running")
    const cancelled = jobs.submit(input("succeed"))
    jobs.cancel(cancelled)
    assert.deepStrictEqual(phaseOf(cancelled, now + 5000), { _tag: "Cancelled", atMs: now })
    assert.strictEqual(jobs.list("ark").length, 4)
    jobs.remove(cancelled)
    assert.isUndefined(jobs.find("ark", cancelled.id))
    assert.isUndefined(jobs.find("openai", cancelled.id))
  })
})
