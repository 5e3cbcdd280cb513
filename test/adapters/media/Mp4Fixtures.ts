/** Real MP4 files for tests, encoded by the ffmpeg binary of `@ffmpeg-installer/ffmpeg` (cached per options). */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import ffmpeg from "@ffmpeg-installer/ffmpeg"

export interface Mp4Options {
  readonly width: number
  readonly height: number
  readonly seconds: number
  readonly audio?: boolean
  /** `moov` before `mdat` (as streaming servers serve it); ffmpeg puts it last by default. */
  readonly faststart?: boolean
  /** Fragmented (`moof` boxes, empty `moov`): its `mvhd` carries no duration. */
  readonly fragmented?: boolean
}

const cache = new Map<string, Uint8Array>()

export const makeMp4 = (options: Mp4Options): Uint8Array => {
  const key = JSON.stringify(options)
  const known = cache.get(key)
  if (known !== undefined) return known
  const dir = mkdtempSync(join(tmpdir(), "tollgate-mp4-"))
  const out = join(dir, "clip.mp4")
  const flags = options.fragmented
    ? ["-movflags", "frag_keyframe+empty_moov"]
    : options.faststart
      ? ["-movflags", "+faststart"]
      : []
  const audio = options.audio ? ["-f", "lavfi", "-i", `sine=frequency=440:duration=${options.seconds}`] : []
  execFileSync(
    ffmpeg.path,
    [
      ...["-hide_banner", "-loglevel", "error", "-y"],
      ...["-f", "lavfi", "-i", `testsrc=size=${options.width}x${options.height}:rate=24:duration=${options.seconds}`],
      ...audio,
      ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"],
      ...(options.audio ? ["-c:a", "aac", "-shortest"] : []),
      ...flags,
      out
    ],
    { stdio: ["ignore", "ignore", "pipe"] }
  )
  const bytes = new Uint8Array(readFileSync(out))
  rmSync(dir, { recursive: true, force: true })
  cache.set(key, bytes)
  return bytes
}

/** The offset and size of the first top-level box of `type` (32-bit sizes only, as ffmpeg writes them). */
export const topLevelBox = (bytes: Uint8Array, type: string): { readonly offset: number; readonly size: number } => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let at = 0
  while (at + 8 <= bytes.length) {
    const size = view.getUint32(at)
    if (String.fromCharCode(...bytes.subarray(at + 4, at + 8)) === type) return { offset: at, size }
    if (size < 8) break
    at += size
  }
  throw new Error(`no top-level ${type} box`)
}
