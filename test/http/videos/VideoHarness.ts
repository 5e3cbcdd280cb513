/**
 * A gateway for the video suites: the real server on PGlite with its video models on a simulator this test starts
 * (tasks take a fraction of a second instead of tens of seconds), polled every 100 ms.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import OpenAI from "openai"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import type { DatabaseOptions } from "../../../src/adapters/store/Database.ts"
import type { VideoWorkerOptions } from "../../../src/app/VideoTasks.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

export const FAST = "video-model-2.0-fast"
export const FULL = "video-model-2.0"
/** The same family on the Sora-style upstream, which reports no tokens: billed from the delivered file. */
export const SORA = "sora-sim"

export const videoConfigYaml = (sim: string, pollIntervalMs: number) => `
upstreams:
  sim-ark: { protocol: ark, baseUrl: "${sim}/api/v3", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-openai-videos: { protocol: openai-videos, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: ${FAST}, plugin: video, upstreams: [sim-ark], upstreamModel: seedance-2-0-fast, pricing: { output: "1.40" } }
  - { id: ${FULL}, plugin: video, upstreams: [sim-ark], upstreamModel: seedance-2-0, pricing: { output: "2.50" } }
  - { id: ${SORA}, plugin: video, upstreams: [sim-openai-videos], upstreamModel: sora-2, pricing: { output: "1.00" } }
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
video: { pollIntervalMs: ${pollIntervalMs}, deadlineMinutes: 30, retentionDays: 7 }
`

export interface VideoHarness {
  readonly gateway: TestGateway
  readonly sim: RunningSimulator
  readonly admin: Admin
  readonly configPath: string
  client(key: string): OpenAI
  close(): Promise<void>
}

export const startVideoHarness = async (
  options: {
    readonly videoMillis?: number
    readonly database?: DatabaseOptions
    readonly video?: Partial<VideoWorkerOptions>
    readonly pollIntervalMs?: number
    /** Hosts and ranges the guarded fetcher may reach although they are private. */
    readonly fetchAllowHosts?: ReadonlyArray<string>
    /**
     * The host the gateway's config names for the simulator (default its own address, 127.0.0.1). Another name for it
     * (`localhost`) makes the simulator's video links, which carry its own address, point off the upstream's origin.
     */
    readonly upstreamHost?: string
  } = {}
): Promise<VideoHarness> => {
  const sim = await startSimulator({ videoMillis: options.videoMillis ?? 300 })
  const dir = mkdtempSync(join(tmpdir(), "tollgate-video-"))
  const configPath = join(dir, "tollgate.yaml")
  const upstreamBase = options.upstreamHost === undefined ? sim.baseUrl : `http://${options.upstreamHost}:${sim.port}`
  writeFileSync(configPath, videoConfigYaml(upstreamBase, options.pollIntervalMs ?? 100))
  const gateway = await startTestGateway({
    configPath,
    ...(options.fetchAllowHosts === undefined ? {} : { fetchAllowHosts: options.fetchAllowHosts }),
    ...(options.database === undefined ? {} : { database: options.database }),
    ...(options.video === undefined ? {} : { video: options.video })
  })
  return {
    gateway,
    sim,
    admin: makeAdmin(gateway),
    configPath,
    client: (key) => new OpenAI({ apiKey: key, baseURL: `${gateway.url}/v1`, maxRetries: 0 }),
    close: async () => {
      await gateway.close()
      await sim.close()
      rmSync(dir, { recursive: true, force: true })
    }
  }
}

export interface VideoWire {
  readonly id: string
  readonly status: string
  readonly progress: number
  readonly error: { readonly code: string; readonly message: string } | null
  readonly metadata: {
    readonly url?: string
    readonly resolution: string
    readonly ratio: string
    readonly input_type: string
  }
  readonly charge: { readonly held: string; readonly captured: string | null; readonly refunded: string | null }
  readonly [key: string]: unknown
}

export const api = async (
  gateway: TestGateway,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {}
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever JSON the gateway answered
): Promise<{ status: number; body: any; headers: Headers }> => {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, body: parsed, headers: response.headers }
}

/** Polls until the task is finished (or the time runs out). */
export const waitForVideo = async (
  gateway: TestGateway,
  key: string,
  id: string,
  timeoutMs = 30_000
): Promise<VideoWire> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const { body } = await api(gateway, key, "GET", `/v1/videos/${id}`)
    if (body.status === "completed" || body.status === "failed") return body as VideoWire
    if (Date.now() > until) throw new Error(`video ${id} still ${body.status} after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}
