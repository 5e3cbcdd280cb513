/** Helpers for the simulator's audio suites: raw HTTP calls, a WAV writer, and an ffprobe of audio-only files. */
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import ffprobe from "@ffprobe-installer/ffprobe"
import type { RunningSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"

// biome-ignore lint/suspicious/noExplicitAny: test bodies are read field by field and asserted on
export type Body = any

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly body: Body
}

const parse = (text: string): Body => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

export const postJson = async (
  sim: RunningSimulator,
  path: string,
  body: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${sim.apiKey}` }
): Promise<Answer> => {
  const response = await fetch(`${sim.baseUrl}${path}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, body: parse(text) }
}

export const postForm = async (
  sim: RunningSimulator,
  path: string,
  form: FormData,
  headers: Record<string, string> = { authorization: `Bearer ${sim.apiKey}` }
): Promise<Answer> => {
  const response = await fetch(`${sim.baseUrl}${path}`, { method: "POST", headers, body: form })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, body: parse(text) }
}

/** A 16-bit mono WAV of `seconds` of a 440 Hz tone. */
export const makeWav = (seconds: number, sampleRate = 16_000): Buffer => {
  const samples = Math.round(seconds * sampleRate)
  const wav = Buffer.alloc(44 + samples * 2)
  wav.write("RIFF", 0, "ascii")
  wav.writeUInt32LE(36 + samples * 2, 4)
  wav.write("WAVE", 8, "ascii")
  wav.write("fmt ", 12, "ascii")
  wav.writeUInt32LE(16, 16)
  wav.writeUInt16LE(1, 20)
  wav.writeUInt16LE(1, 22)
  wav.writeUInt32LE(sampleRate, 24)
  wav.writeUInt32LE(sampleRate * 2, 28)
  wav.writeUInt16LE(2, 32)
  wav.writeUInt16LE(16, 34)
  wav.write("data", 36, "ascii")
  wav.writeUInt32LE(samples * 2, 40)
  for (let i = 0; i < samples; i++) {
    wav.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / sampleRate)), 44 + i * 2)
  }
  return wav
}

export interface AudioProbe {
  readonly codec: string
  readonly sampleRate: number
  readonly channels: number
  readonly durationSeconds: number
}

/** ffprobe's view of an audio file (test/support/Ffprobe.ts expects a video stream, so audio needs its own). */
export const probeAudio = (bytes: Uint8Array, extension: string, rawPcm = false): Promise<AudioProbe> => {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-sim-audio-test-"))
  const file = join(dir, `speech.${extension}`)
  writeFileSync(file, bytes)
  const format = rawPcm ? ["-f", "s16le", "-ar", "24000", "-ac", "1"] : []
  return new Promise<AudioProbe>((resolve, reject) => {
    execFile(
      ffprobe.path,
      ["-v", "error", ...format, "-count_packets", "-show_streams", "-show_format", "-of", "json", file],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) {
          reject(new Error(`ffprobe failed: ${stderr || error.message}`))
          return
        }
        const json = JSON.parse(stdout) as Body
        const stream = (json.streams ?? []).find((s: Body) => s.codec_type === "audio")
        if (stream === undefined) {
          reject(new Error("ffprobe found no audio stream"))
          return
        }
        resolve({
          codec: stream.codec_name,
          sampleRate: Number(stream.sample_rate),
          channels: Number(stream.channels),
          durationSeconds: Number(stream.duration ?? json.format?.duration)
        })
      }
    )
  }).finally(() => rmSync(dir, { recursive: true, force: true }))
}

/** Seconds ffmpeg really decodes from a file: every packet is read, not estimated from the bitrate. */
export const decodedSeconds = (bytes: Uint8Array, extension: string): Promise<number> => {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-sim-audio-test-"))
  const file = join(dir, `speech.${extension}`)
  writeFileSync(file, bytes)
  return new Promise<number>((resolve, reject) => {
    execFile(
      ffprobe.path,
      [
        "-v",
        "error",
        "-select_streams",
        "a:0",
        "-show_entries",
        "packet=pts_time,duration_time",
        "-of",
        "csv=p=0",
        file
      ],
      { maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) {
          reject(new Error(`ffprobe failed: ${stderr || error.message}`))
          return
        }
        const ends = stdout
          .trim()
          .split("\n")
          .map((line) => line.split(",").map(Number))
          .map(([pts = 0, duration = 0]) => pts + duration)
          .filter((end) => Number.isFinite(end))
        resolve(Math.max(0, ...ends))
      }
    )
  }).finally(() => rmSync(dir, { recursive: true, force: true }))
}
