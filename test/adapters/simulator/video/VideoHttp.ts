/** Small HTTP helpers for the simulator's video suites: JSON calls with the simulator key, polling, downloads. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RunningSimulator } from "../../../../src/adapters/simulator/SimulatorServer.ts"
import { type ProbeInfo, probe } from "../../../support/Ffprobe.ts"

// biome-ignore lint/suspicious/noExplicitAny: test bodies are read field by field and asserted on
export type Body = any

export interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: Body
}

export const call = async (
  sim: RunningSimulator,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = { authorization: `Bearer ${sim.apiKey}` }
): Promise<Answer> => {
  const response = await fetch(`${sim.baseUrl}${path}`, {
    method,
    headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === "" ? undefined : JSON.parse(text) }
}

/** Polls `path` until `done(body)` holds (or the deadline passes), returning every body seen in order. */
export const pollUntil = async (
  sim: RunningSimulator,
  path: string,
  done: (body: Body) => boolean,
  timeoutMs = 20_000
): Promise<ReadonlyArray<Body>> => {
  const seen: Array<Body> = []
  const until = Date.now() + timeoutMs
  for (;;) {
    const answer = await call(sim, "GET", path)
    seen.push(answer.body)
    if (done(answer.body) || Date.now() > until) return seen
    await new Promise((resolve) => setTimeout(resolve, 15))
  }
}

export interface Download {
  readonly status: number
  readonly contentType: string | null
  readonly contentLength: number
  readonly bytes: Uint8Array
  readonly info: ProbeInfo
}

/** Downloads an MP4 and probes it. */
export const downloadAndProbe = async (url: string, headers: Record<string, string> = {}): Promise<Download> => {
  const response = await fetch(url, { headers })
  const bytes = new Uint8Array(await response.arrayBuffer())
  const dir = mkdtempSync(join(tmpdir(), "tollgate-sim-video-test-"))
  try {
    const file = join(dir, "clip.mp4")
    writeFileSync(file, bytes)
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      contentLength: Number(response.headers.get("content-length")),
      bytes,
      info: await probe(file)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
