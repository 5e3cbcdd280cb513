import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { type Mp4Info, Mp4InfoError, mp4Info, usageFromFile } from "../../../src/adapters/media/Mp4Info.ts"
import { makeMp4, topLevelBox } from "./Mp4Fixtures.ts"

const info = (bytes: Uint8Array): Mp4Info => {
  const result = mp4Info(bytes)
  if (result._tag !== "Mp4Info") throw new Error(`expected an Mp4Info, got: ${result.reason}`)
  return result
}

const reasonOf = (bytes: Uint8Array): string => {
  const result = mp4Info(bytes)
  assert.instanceOf(result, Mp4InfoError)
  return result._tag === "Mp4InfoError" ? result.reason : ""
}

describe("mp4Info", () => {
  it("reads size, length and audio of a file ffmpeg wrote (moov after mdat)", () => {
    const parsed = info(makeMp4({ width: 320, height: 240, seconds: 2, audio: true }))
    assert.strictEqual(parsed.width, 320)
    assert.strictEqual(parsed.height, 240)
    assert.isTrue(parsed.hasAudio)
    // AAC priming makes the movie a little longer than the video track.
    assert.isTrue(Math.abs(parsed.durationSeconds - 2) < 0.1, `duration ${parsed.durationSeconds}`)
  })

  it("reads a faststart file without audio", () => {
    const bytes = makeMp4({ width: 1280, height: 720, seconds: 1, faststart: true })
    assert.strictEqual(topLevelBox(bytes, "moov").offset < topLevelBox(bytes, "mdat").offset, true)
    const parsed = info(bytes)
    assert.deepStrictEqual(
      { width: parsed.width, height: parsed.height, hasAudio: parsed.hasAudio },
      { width: 1280, height: 720, hasAudio: false }
    )
    assert.strictEqual(parsed.durationSeconds, 1)
  })

  it("prices the delivered file by the vendor formula with the length rounded", () => {
    const parsed = info(makeMp4({ width: 1280, height: 720, seconds: 5, audio: true }))
    // 1280 × 720 × (24 × 5 + 1) / 1024: the vendor's reported count for 720p 5 s.
    assert.deepStrictEqual(usageFromFile(parsed), { tokens: 108_900n, reported: false })
    assert.deepStrictEqual(
      usageFromFile({ _tag: "Mp4Info", width: 864, height: 480, durationSeconds: 2.04, hasAudio: false }),
      { tokens: 19_845n, reported: false }
    )
  })

  it("follows a 64-bit box size", () => {
    const bytes = makeMp4({ width: 320, height: 240, seconds: 1 })
    const moov = topLevelBox(bytes, "moov")
    const wide = new Uint8Array(bytes.length + 8)
    wide.set(bytes.subarray(0, moov.offset))
    const view = new DataView(wide.buffer)
    view.setUint32(moov.offset, 1)
    wide.set([0x6d, 0x6f, 0x6f, 0x76], moov.offset + 4)
    view.setBigUint64(moov.offset + 8, BigInt(moov.size + 8))
    wide.set(bytes.subarray(moov.offset + 8), moov.offset + 16)
    assert.deepStrictEqual(info(wide), info(bytes))
  })

  it("fails with a reason for a truncated file", () => {
    const bytes = makeMp4({ width: 320, height: 240, seconds: 1, faststart: true })
    const moov = topLevelBox(bytes, "moov")
    assert.include(reasonOf(bytes.subarray(0, moov.offset + 100)), "runs past the end")
    assert.include(reasonOf(bytes.subarray(0, 3)), "truncated box header")
    assert.strictEqual(reasonOf(new Uint8Array(0)), "empty input")
  })

  it("fails for a file whose moov is cut off at the end (not faststart)", () => {
    const bytes = makeMp4({ width: 320, height: 240, seconds: 1 })
    const moov = topLevelBox(bytes, "moov")
    assert.include(reasonOf(bytes.subarray(0, moov.offset)), "no moov box")
  })

  it("fails for what is not an MP4", () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
    assert.instanceOf(mp4Info(png), Mp4InfoError)
    assert.instanceOf(mp4Info(new TextEncoder().encode("<html><body>not found</body></html>")), Mp4InfoError)
    assert.instanceOf(mp4Info(new TextEncoder().encode('{"error":{"code":"NotFound"}}')), Mp4InfoError)
  })

  it("fails for a fragmented file, whose moov carries no duration", () => {
    assert.include(reasonOf(makeMp4({ width: 320, height: 240, seconds: 1, fragmented: true })), "duration")
  })

  it("never throws on random bytes, nor on a real file with bytes flipped or cut", () => {
    const real = makeMp4({ width: 320, height: 240, seconds: 1, faststart: true })
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const result = mp4Info(bytes)
        return result._tag === "Mp4Info" || result._tag === "Mp4InfoError"
      }),
      { numRuns: 2000 }
    )
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: real.length - 1 }), fc.integer({ min: 0, max: 255 })), { maxLength: 8 }),
        fc.nat({ max: real.length }),
        (flips, cut) => {
          const bytes = real.slice(0, Math.max(cut, 1))
          for (const [at, value] of flips) if (at < bytes.length) bytes[at] = value
          const result = mp4Info(bytes)
          return result._tag === "Mp4Info" || result._tag === "Mp4InfoError"
        }
      ),
      { numRuns: 1000 }
    )
  })
})
