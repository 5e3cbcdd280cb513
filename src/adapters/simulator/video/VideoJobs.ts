/**
 * The simulator's video tasks: one store per simulator instance, shared by the Ark and OpenAI video dialects. A task's
 * state is a function of the wall clock (queued for the first 10% of its simulated time, then running, then its
 * outcome), so nothing has to tick; the MP4 is rendered from submit on and `succeeded` waits for both the time and
 * the file. This is the simulator's edge for video: it reads the wall clock (`Date.now`) and owns the ffmpeg renderer.
 */
import type { JsonRecord } from "../Json.ts"
import { unseenReads, type VideoOutcome } from "./VideoMarkers.ts"
import { makeVideoRenderer, type RenderedFile, type RenderSpec, type VideoRenderer } from "./VideoRender.ts"

export type VideoApi = "ark" | "openai"

/** The share of a task's simulated time it spends queued. */
export const QUEUED_SHARE = 0.1
export const DEFAULT_VIDEO_MILLIS = 20_000
const MAX_JOBS = 10_000

export interface VideoJobInput {
  readonly api: VideoApi
  readonly model: string
  readonly prompt: string
  readonly spec: RenderSpec
  readonly outcome: VideoOutcome
  /** Request fields the dialect echoes back in its task object (Ark: resolution, ratio, seed, …). */
  readonly echo: JsonRecord
}

type RenderState =
  | { readonly _tag: "Pending" }
  | { readonly _tag: "Done"; readonly atMs: number; readonly file: RenderedFile }
  | { readonly _tag: "Failed"; readonly atMs: number; readonly message: string }

export interface VideoJob extends VideoJobInput {
  readonly id: string
  readonly createdAtMs: number
  readonly durationMs: number
  /**
   * Mutable: the only parts of a task that change after submit. `unseenReads`: reads of the task still to answer 404
   * (`[sim:video-404=N]`).
   */
  readonly state: { cancelledAtMs: number | undefined; render: RenderState; unseenReads: number }
}

export type VideoPhase =
  | { readonly _tag: "Queued" }
  /** `fraction` of the simulated time has passed (below 1 until the task ends). */
  | { readonly _tag: "Running"; readonly fraction: number; readonly sinceMs: number }
  | { readonly _tag: "Succeeded"; readonly atMs: number; readonly file: RenderedFile }
  | { readonly _tag: "Failed"; readonly atMs: number; readonly cause: "marker" | "render"; readonly message: string }
  | { readonly _tag: "Expired"; readonly atMs: number }
  | { readonly _tag: "Cancelled"; readonly atMs: number }

/** Where a task stands at `nowMs`. */
export const phaseOf = (job: VideoJob, nowMs: number): VideoPhase => {
  if (job.state.cancelledAtMs !== undefined) return { _tag: "Cancelled", atMs: job.state.cancelledAtMs }
  const elapsed = nowMs - job.createdAtMs
  const sinceMs = job.createdAtMs + Math.round(job.durationMs * QUEUED_SHARE)
  if (elapsed < job.durationMs * QUEUED_SHARE) return { _tag: "Queued" }
  if (elapsed < job.durationMs) return { _tag: "Running", fraction: elapsed / job.durationMs, sinceMs }
  const endMs = job.createdAtMs + job.durationMs
  switch (job.outcome) {
    case "stall":
      return { _tag: "Running", fraction: 0.99, sinceMs }
    case "fail":
      return { _tag: "Failed", atMs: endMs, cause: "marker", message: "the prompt asked for a failure" }
    case "expire":
      return { _tag: "Expired", atMs: endMs }
    case "succeed": {
      const render = job.state.render
      switch (render._tag) {
        case "Pending":
          return { _tag: "Running", fraction: 0.99, sinceMs }
        case "Done":
          return { _tag: "Succeeded", atMs: Math.max(endMs, render.atMs), file: render.file }
        case "Failed":
          return { _tag: "Failed", atMs: Math.max(endMs, render.atMs), cause: "render", message: render.message }
      }
    }
  }
}

export interface VideoJobs {
  /** Wall-clock milliseconds. */
  readonly now: () => number
  /** The simulator's host root, for absolute file links. */
  readonly baseUrl: () => string
  /** Stores a task and starts rendering its file when it is meant to succeed. */
  readonly submit: (input: VideoJobInput) => VideoJob
  readonly find: (api: VideoApi, id: string) => VideoJob | undefined
  /** Tasks of one API, oldest first. */
  readonly list: (api: VideoApi) => ReadonlyArray<VideoJob>
  readonly cancel: (job: VideoJob) => void
  /** Whether this read of the task answers 404 as for an unknown task (`[sim:video-404=N]`); counts the read. */
  readonly unseen: (job: VideoJob) => boolean
  readonly remove: (job: VideoJob) => void
  readonly close: () => Promise<void>
}

export interface VideoJobsOptions {
  /** Simulated time from submit to the end of a task. */
  readonly videoMillis: number
  readonly baseUrl: () => string
  readonly renderer?: VideoRenderer | undefined
  readonly now?: (() => number) | undefined
}

const digits = (ms: number): string => new Date(ms).toISOString().replace(/\D/g, "").slice(0, 14)

export const makeVideoJobs = (options: VideoJobsOptions): VideoJobs => {
  // The wall clock: task states advance with real time, which is the point of this edge.
  const now = options.now ?? Date.now
  const renderer = options.renderer ?? makeVideoRenderer()
  const jobs = new Map<string, VideoJob>()
  let counter = 0

  const newId = (api: VideoApi, atMs: number): string => {
    counter += 1
    if (api === "ark") return `cgt-${digits(atMs)}-${counter.toString(36).padStart(5, "0")}`
    return `video_${atMs.toString(16).padStart(16, "0")}${counter.toString(16).padStart(16, "0")}`
  }

  const key = (api: VideoApi, id: string): string => `${api}:${id}`

  return {
    now,
    baseUrl: options.baseUrl,
    submit: (input) => {
      const createdAtMs = now()
      const job: VideoJob = {
        ...input,
        id: newId(input.api, createdAtMs),
        createdAtMs,
        durationMs: Math.max(0, options.videoMillis),
        state: { cancelledAtMs: undefined, render: { _tag: "Pending" }, unseenReads: unseenReads(input.prompt) }
      }
      if (jobs.size >= MAX_JOBS) jobs.delete(jobs.keys().next().value!)
      jobs.set(key(input.api, job.id), job)
      if (input.outcome === "succeed") {
        renderer.render(input.spec).then(
          (file) => {
            job.state.render = { _tag: "Done", atMs: now(), file }
          },
          (error: unknown) => {
            job.state.render = {
              _tag: "Failed",
              atMs: now(),
              message: error instanceof Error ? error.message : String(error)
            }
          }
        )
      }
      return job
    },
    find: (api, id) => jobs.get(key(api, id)),
    list: (api) => [...jobs.values()].filter((job) => job.api === api),
    cancel: (job) => {
      job.state.cancelledAtMs = now()
    },
    unseen: (job) => {
      if (job.state.unseenReads <= 0) return false
      job.state.unseenReads -= 1
      return true
    },
    remove: (job) => {
      jobs.delete(key(job.api, job.id))
    },
    close: () => renderer.close()
  }
}
