import { assert, describe, it } from "@effect/vitest"
import { existsSync } from "node:fs"
import { dirname } from "node:path"
import { makeVideoRenderer } from "../../../../src/adapters/simulator/video/VideoRender.ts"
import { probe } from "../../../support/Ffprobe.ts"

describe("makeVideoRenderer", () => {
  it("renders H.264 + AAC at the exact size and length, shares identical clips, deletes its files on close", async () => {
    const renderer = makeVideoRenderer()
    const spec = { width: 320, height: 176, seconds: 2, audio: true }
    const [file, again] = await Promise.all([renderer.render(spec), renderer.render(spec)])
    assert.strictEqual(again.path, file.path)
    assert.isTrue(existsSync(file.path))
    const info = await probe(file.path)
    assert.strictEqual(info.video.codec, "h264")
    assert.strictEqual(info.video.pixelFormat, "yuv420p")
    assert.strictEqual(info.video.fps, 24)
    assert.deepStrictEqual([info.video.width, info.video.height], [320, 176])
    assert.strictEqual(info.video.frames, 48)
    assert.approximately(info.durationSeconds, 2, 0.1)
    assert.strictEqual(info.audio?.codec, "aac")
    await renderer.close()
    assert.isFalse(existsSync(file.path))
    assert.isFalse(existsSync(dirname(file.path)))
    const late = await renderer.render(spec).then(
      () => undefined,
      (error: unknown) => error
    )
    assert.instanceOf(late, Error)
  })

  it("close stops an encode that is still running", async () => {
    const renderer = makeVideoRenderer()
    const pending = renderer.render({ width: 1920, height: 1088, seconds: 15, audio: true }).then(
      () => "rendered",
      () => "stopped"
    )
    await new Promise((resolve) => setTimeout(resolve, 100))
    await renderer.close()
    assert.strictEqual(await pending, "stopped")
  })
})
