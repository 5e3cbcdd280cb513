/**
 * The simulator's binary replies: a rendered MP4 on disk, which the server streams to the socket. The dialect handlers
 * answer JSON (`SimReply`); only the video routes also answer a file.
 */
import { json, type SimReply } from "../SimResponse.ts"
import { phaseOf, type VideoJob, type VideoJobs } from "./VideoJobs.ts"

export interface FileReply {
  readonly _tag: "File"
  readonly path: string
  readonly bytes: number
  readonly contentType: string
  /** A HEAD request: headers only. */
  readonly headOnly: boolean
}

/** Where finished videos are served, like a vendor's object-storage link: no key needed, the id is the secret. */
export const SIM_FILES_PREFIX = "/sim-files/videos/"

export const fileUrl = (jobs: VideoJobs, job: VideoJob): string => `${jobs.baseUrl()}${SIM_FILES_PREFIX}${job.id}.mp4`

/** The MP4 of a finished task, or undefined while it is not (or never will be) there. */
export const finishedFile = (job: VideoJob, nowMs: number, headOnly: boolean): FileReply | undefined => {
  const phase = phaseOf(job, nowMs)
  return phase._tag === "Succeeded"
    ? { _tag: "File", path: phase.file.path, bytes: phase.file.bytes, contentType: "video/mp4", headOnly }
    : undefined
}

/** `GET|HEAD /sim-files/videos/{id}.mp4`. */
export const simFile = (jobs: VideoJobs, name: string, headOnly: boolean): SimReply | FileReply => {
  const id = name.endsWith(".mp4") ? name.slice(0, -4) : name
  const job = jobs.find("ark", id) ?? jobs.find("openai", id)
  const file = job === undefined ? undefined : finishedFile(job, jobs.now(), headOnly)
  return file ?? json(404, { error: { code: "NoSuchKey", message: "The specified key does not exist." } })
}
