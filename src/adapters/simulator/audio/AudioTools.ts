/**
 * The ffmpeg side of the audio routes: which encoders the bundled binary has, encoding raw PCM into a compressed
 * stream, and reading the duration of an uploaded file. This module wraps node:child_process and node:fs, so it is
 * written with callbacks and Promises. `close()` kills running children and removes the temp directory.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Readable } from "node:stream"
import ffmpeg from "@ffmpeg-installer/ffmpeg"
import type { StreamBody } from "./AudioReply.ts"

export interface AudioTools {
  /** The names of the binary's audio encoders (`libmp3lame`, `libopus`, ...); looked up once. */
  readonly encoders: () => Promise<ReadonlySet<string>>
  /** Pipes raw s16le mono PCM through ffmpeg; the body is ffmpeg's stdout as it is produced. */
  readonly encode: (pcm: Iterable<Buffer>, sampleRate: number, output: ReadonlyArray<string>) => StreamBody
  /** Seconds of audio ffmpeg decodes from the bytes, or undefined when it cannot read them. */
  readonly decodedSeconds: (bytes: Uint8Array, extension: string) => Promise<number | undefined>
  readonly close: () => Promise<void>
}

const STDERR_KEEP = 64 * 1024

const clock = (text: string): number => {
  const [h = "0", m = "0", s = "0"] = text.split(":")
  return Number(h) * 3600 + Number(m) * 60 + Number(s)
}

/** The last `time=` of a decode (what was really decoded), else the container's `Duration:`. */
export const secondsFromFfmpegLog = (stderr: string): number | undefined => {
  const times = [...stderr.matchAll(/time=\s*(\d+:\d{2}:\d{2}(?:\.\d+)?)/g)]
  const last = times.at(-1)
  const decoded = last === undefined ? undefined : clock(last[1]!)
  if (decoded !== undefined && decoded > 0) return decoded
  const duration = /Duration:\s*(\d+:\d{2}:\d{2}(?:\.\d+)?)/.exec(stderr)
  const declared = duration === null ? undefined : clock(duration[1]!)
  return declared !== undefined && declared > 0 ? declared : undefined
}

export const makeAudioTools = (): AudioTools => {
  const children = new Set<ChildProcess>()
  let closed = false
  let directory: Promise<string> | undefined
  let encoderList: Promise<ReadonlySet<string>> | undefined
  let fileCounter = 0

  const run = (
    args: ReadonlyArray<string>,
    stdio: "ignore" | "pipe"
  ): { child: ChildProcess; done: Promise<{ code: number | null; out: string; err: string }> } => {
    const child = spawn(ffmpeg.path, args, { stdio: ["ignore", stdio, "pipe"] })
    children.add(child)
    let out = ""
    let err = ""
    child.stdout?.setEncoding("utf8")
    child.stdout?.on("data", (chunk: string) => {
      out += chunk
    })
    child.stderr?.setEncoding("utf8")
    child.stderr?.on("data", (chunk: string) => {
      err = (err + chunk).slice(-STDERR_KEEP)
    })
    const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      child.once("error", () => {
        children.delete(child)
        resolve({ code: null, out, err })
      })
      child.once("close", (code) => {
        children.delete(child)
        resolve({ code, out, err })
      })
    })
    return { child, done }
  }

  const kill = (child: ChildProcess): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
  }

  return {
    encoders: () => {
      encoderList ??= run(["-hide_banner", "-encoders"], "pipe").done.then(
        ({ out }) =>
          new Set(
            out
              .split("\n")
              .map((line) => /^\s*A\S*\s+(\S+)/.exec(line)?.[1])
              .filter((name): name is string => name !== undefined)
          )
      )
      return encoderList
    },
    encode: (pcm, sampleRate, output) => {
      const child = spawn(
        ffmpeg.path,
        [
          ...["-hide_banner", "-loglevel", "error", "-nostdin"],
          ...["-f", "s16le", "-ar", String(sampleRate), "-ac", "1", "-i", "pipe:0"],
          ...output,
          "pipe:1"
        ],
        { stdio: ["pipe", "pipe", "ignore"] }
      )
      children.add(child)
      const forget = (): void => {
        children.delete(child)
      }
      child.once("close", forget)
      child.once("error", () => {
        forget()
        child.stdout?.destroy(new Error("ffmpeg could not start"))
      })
      const source = Readable.from(pcm)
      // ffmpeg closing its stdin early (killed, or failed) must not crash the simulator with EPIPE.
      child.stdin?.on("error", () => source.destroy())
      source.pipe(child.stdin!)
      child.once("close", (code) => {
        if (code !== 0) child.stdout?.destroy(new Error(`ffmpeg exited with ${code}`))
      })
      return {
        body: child.stdout!,
        stop: () => {
          source.destroy()
          kill(child)
        }
      }
    },
    decodedSeconds: (bytes, extension) => {
      if (closed) return Promise.resolve(undefined)
      directory ??= mkdtemp(join(tmpdir(), "tollgate-sim-audio-"))
      fileCounter += 1
      const ext = /^[a-z0-9]{1,5}$/.test(extension) ? extension : "bin"
      return directory.then((dir) => {
        const path = join(dir, `upload-${fileCounter}.${ext}`)
        return writeFile(path, bytes)
          .then(() => run(["-hide_banner", "-nostdin", "-i", path, "-vn", "-f", "null", "-"], "ignore").done)
          .then(({ code, err }) => (code === 0 ? secondsFromFfmpegLog(err) : undefined))
          .finally(() => rm(path, { force: true }))
      })
    },
    close: () => {
      closed = true
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
      return Promise.all(exits)
        .then(() => directory?.catch(() => undefined))
        .then((dir) => (dir === undefined ? undefined : rm(dir, { recursive: true, force: true })))
    }
  }
}
