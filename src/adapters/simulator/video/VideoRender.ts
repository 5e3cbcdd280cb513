/**
 * Real MP4 files for the simulated video APIs: H.264 (libx264, yuv420p) at 24 fps with an optional AAC track, encoded
 * by the ffmpeg binary of `@ffmpeg-installer/ffmpeg` from lavfi test sources. This module is an edge around
 * node:child_process and node:fs, so it is written with Promises and callbacks.
 *
 * Files live in one temp directory per renderer, created on the first render and removed by `close()`. A file depends
 * only on its size, length and audio flag, so tasks asking for the same clip share one render.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtemp, rename, rm, stat } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import ffmpeg from "@ffmpeg-installer/ffmpeg"

export const RENDER_FPS = 24

export interface RenderSpec {
  readonly width: number
  readonly height: number
  readonly seconds: number
  readonly audio: boolean
}

export interface RenderedFile {
  readonly path: string
  readonly bytes: number
}

export interface VideoRenderer {
  /** Resolves once the file is complete on disk; rejects when ffmpeg fails or the renderer closed. */
  readonly render: (spec: RenderSpec) => Promise<RenderedFile>
  /** Stops running encodes and deletes every file. */
  readonly close: () => Promise<void>
}

/** ffmpeg's arguments for one clip: a moving test pattern and a sine tone, `moov` first so it can be streamed. */
export const ffmpegArgs = (spec: RenderSpec, out: string): ReadonlyArray<string> => {
  const { width, height, seconds, audio } = spec
  return [
    ...["-hide_banner", "-loglevel", "error", "-nostdin", "-y"],
    ...["-f", "lavfi", "-i", `testsrc2=size=${width}x${height}:rate=${RENDER_FPS}:duration=${seconds}`],
    ...(audio ? ["-f", "lavfi", "-i", `sine=frequency=440:sample_rate=48000:duration=${seconds}`] : []),
    ...["-map", "0:v", ...(audio ? ["-map", "1:a"] : [])],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-r", String(RENDER_FPS)],
    ...(audio ? ["-c:a", "aac", "-b:a", "64k"] : []),
    ...["-t", String(seconds), "-movflags", "+faststart", "-f", "mp4", out]
  ]
}

const STDERR_KEEP = 2000

/** Two encodes at a time: libx264 already uses every core, and a burst of submits must not fork dozens of encoders. */
export const makeVideoRenderer = (options: { readonly concurrency?: number } = {}): VideoRenderer => {
  const concurrency = Math.max(1, options.concurrency ?? 2)
  const cache = new Map<string, Promise<RenderedFile>>()
  const children = new Set<ChildProcess>()
  const waiting: Array<() => void> = []
  let running = 0
  let closed = false
  let directory: Promise<string> | undefined

  const dir = (): Promise<string> => {
    directory ??= mkdtemp(join(tmpdir(), "tollgate-sim-videos-"))
    return directory
  }

  const slot = (): Promise<void> =>
    new Promise((resolve) => {
      if (running < concurrency) {
        running += 1
        resolve()
      } else {
        waiting.push(resolve)
      }
    })

  const release = (): void => {
    const next = waiting.shift()
    if (next === undefined) running -= 1
    else next()
  }

  const encode = (spec: RenderSpec, out: string): Promise<void> =>
    new Promise((resolve, reject) => {
      if (closed) {
        reject(new Error("the simulator closed"))
        return
      }
      const child = spawn(ffmpeg.path, ffmpegArgs(spec, out), { stdio: ["ignore", "ignore", "pipe"] })
      children.add(child)
      let stderr = ""
      child.stderr?.setEncoding("utf8")
      child.stderr?.on("data", (chunk: string) => {
        stderr = (stderr + chunk).slice(-STDERR_KEEP)
      })
      child.once("error", (error) => {
        children.delete(child)
        reject(error)
      })
      child.once("close", (code, signal) => {
        children.delete(child)
        if (code === 0) resolve()
        else reject(new Error(`ffmpeg exited with ${signal ?? code}: ${stderr.trim()}`))
      })
    })

  const renderOnce = async (spec: RenderSpec): Promise<RenderedFile> => {
    await slot()
    try {
      if (closed) throw new Error("the simulator closed")
      const base = join(await dir(), `${spec.width}x${spec.height}-${spec.seconds}s-${spec.audio ? "av" : "v"}`)
      // Encode under a temporary name so a half-written file is never served.
      await encode(spec, `${base}.part.mp4`)
      await rename(`${base}.part.mp4`, `${base}.mp4`)
      return { path: `${base}.mp4`, bytes: (await stat(`${base}.mp4`)).size }
    } finally {
      release()
    }
  }

  return {
    render: (spec) => {
      if (closed) return Promise.reject(new Error("the simulator closed"))
      const key = `${spec.width}x${spec.height}:${spec.seconds}:${spec.audio}`
      const known = cache.get(key)
      if (known !== undefined) return known
      const rendering = renderOnce(spec)
      cache.set(key, rendering)
      // A failed render is not cached: the next task asking for the clip tries again.
      rendering.catch(() => {
        if (cache.get(key) === rendering) cache.delete(key)
      })
      return rendering
    },
    close: async () => {
      closed = true
      for (const release of waiting.splice(0)) release()
      const exits = [...children].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve()
            else {
              child.once("close", () => resolve())
              child.kill("SIGKILL")
            }
          })
      )
      await Promise.all(exits)
      if (directory !== undefined) {
        const path = await directory.catch(() => undefined)
        if (path !== undefined) await rm(path, { recursive: true, force: true })
      }
    }
  }
}
