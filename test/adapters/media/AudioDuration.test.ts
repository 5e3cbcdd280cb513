/**
 * Audio lengths read by music-metadata: a WAV written here, mp3/flac/ogg-opus/m4a encoded by the bundled ffmpeg, and
 * bytes that are not audio.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { audioDurationMillis, upperBoundMillis } from "../../../src/adapters/media/AudioDuration.ts"
import { wavFile } from "../../plugins/audio/SimulatorHarness.ts"

const dir = mkdtempSync(join(tmpdir(), "tollgate-audio-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** `seconds` of a sine tone encoded by ffmpeg into `file` (its extension picks the container). */
const encoded = (file: string, seconds: number, codec: ReadonlyArray<string>): Uint8Array => {
  const path = join(dir, file)
  execFileSync(
    ffmpeg.path,
    [
      "-hide_banner",
      "-loglevel",
      "error",
      "-f",
      "lavfi",
      "-i",
      `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
      "-ac",
      "1",
      ...codec,
      "-y",
      path
    ],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  return readFileSync(path)
}

describe("audioDurationMillis", () => {
  it.effect("reads a PCM WAV's length from its header", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* audioDurationMillis(wavFile(2.5)), 2500)
      assert.strictEqual(yield* audioDurationMillis(wavFile(0.75, 8000)), 750)
    })
  )

  it.effect("reads mp3, flac, ogg/opus and m4a made by ffmpeg (within 60 ms)", () =>
    Effect.gen(function* () {
      const files = [
        encoded("tone.mp3", 3, ["-c:a", "libmp3lame", "-b:a", "64k"]),
        encoded("tone.flac", 3, ["-c:a", "flac"]),
        encoded("tone.ogg", 3, ["-c:a", "libopus", "-b:a", "32k"]),
        encoded("tone.m4a", 3, ["-c:a", "aac", "-b:a", "64k"])
      ]
      for (const [index, file] of files.entries()) {
        const millis = yield* audioDurationMillis(file)
        assert.isNotNull(millis, `file ${index}`)
        assert.isAtMost(Math.abs((millis ?? 0) - 3000), 60, `file ${index}: ${millis}`)
      }
    })
  )

  it.effect("ignores a lying filename: the content decides", () =>
    Effect.gen(function* () {
      const mp3 = encoded("named.mp3", 1, ["-c:a", "libmp3lame", "-b:a", "32k"])
      const millis = yield* audioDurationMillis(mp3, "speech.wav")
      assert.isAtMost(Math.abs((millis ?? 0) - 1000), 60)
    })
  )

  it.effect("is null for bytes that are not audio", () =>
    Effect.gen(function* () {
      assert.isNull(yield* audioDurationMillis(new Uint8Array(0)))
      assert.isNull(yield* audioDurationMillis(new TextEncoder().encode("definitely not an audio file, just text")))
      const noise = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 251)
      assert.isNull(yield* audioDurationMillis(noise, "noise.bin"))
      // A RIFF/WAVE header cut off before its chunks.
      assert.isNull(yield* audioDurationMillis(wavFile(1).slice(0, 20)))
    })
  )
})

describe("upperBoundMillis", () => {
  it("assumes 8 kbps: one millisecond per byte", () => {
    assert.strictEqual(upperBoundMillis(0), 0)
    assert.strictEqual(upperBoundMillis(1000), 1000)
    assert.strictEqual(upperBoundMillis(25 * 1024 * 1024), 26_214_400)
  })

  it("bounds the real length of compressed speech-rate files", () => {
    const mp3 = encoded("bound.mp3", 2, ["-c:a", "libmp3lame", "-b:a", "16k"])
    assert.isAtLeast(upperBoundMillis(mp3.byteLength), 2000)
  })
})
