/**
 * Which video handler answers a request: Ark tasks under `/api/v3`, OpenAI videos under `/v1/videos`, and the
 * rendered files under `/sim-files/videos/`. Handlers close over the raw request (multipart needs its bytes).
 */
import type { RawSimRequest } from "../images/EditInputs.ts"
import type { Dialect, SimContext, SimReply, SimRequest } from "../SimResponse.ts"
import { ARK_PREFIX, ARK_TASKS_PATH, arkCreate, arkDelete, arkForcedError, arkGet, arkList } from "./ArkVideos.ts"
import { arkError } from "./ArkRequest.ts"
import { createVideo, deleteVideo, getVideo, listVideos, VIDEOS_PATH, videoContent } from "./OpenAIVideos.ts"
import { type FileReply, SIM_FILES_PREFIX, simFile } from "./VideoFiles.ts"
import type { VideoJobs } from "./VideoJobs.ts"
import { json } from "../SimResponse.ts"

export interface VideoRoute {
  readonly dialect: Dialect
  /** The body of a forced error status, when the dialect's envelope is not one of the three text dialects'. */
  readonly forcedBody?: ((status: number, requestId: string) => unknown) | undefined
  readonly handle: (request: SimRequest, context: SimContext) => SimReply | FileReply
}

const ark = (handle: VideoRoute["handle"]): VideoRoute => ({ dialect: "openai", forcedBody: arkForcedError, handle })
const openai = (handle: VideoRoute["handle"]): VideoRoute => ({ dialect: "openai", handle })

const segment = (value: string): string | undefined => {
  if (value === "" || value.includes("/")) return undefined
  // A stray `%` would make decodeURIComponent throw; such an id matches no task either way.
  return /%(?![0-9a-f]{2})/i.test(value) ? value : decodeURIComponent(value)
}

export const videoRoute = (request: RawSimRequest, jobs: VideoJobs): VideoRoute | undefined => {
  const { method, path } = request
  if (path.startsWith(SIM_FILES_PREFIX) && (method === "GET" || method === "HEAD")) {
    const name = segment(path.slice(SIM_FILES_PREFIX.length))
    return name === undefined ? undefined : openai(() => simFile(jobs, name, method === "HEAD"))
  }
  if (path === ARK_TASKS_PATH) {
    if (method === "POST") return ark((_, ctx) => arkCreate(request, ctx, jobs))
    if (method === "GET") return ark((_, ctx) => arkList(request, ctx, jobs))
  }
  if (path.startsWith(`${ARK_TASKS_PATH}/`)) {
    const id = segment(path.slice(ARK_TASKS_PATH.length + 1))
    if (id !== undefined && method === "GET") return ark((_, ctx) => arkGet(request, ctx, jobs, id))
    if (id !== undefined && method === "DELETE") return ark((_, ctx) => arkDelete(request, ctx, jobs, id))
  }
  if (path === ARK_PREFIX || path.startsWith(`${ARK_PREFIX}/`)) {
    return ark(() => json(404, arkError(404, "InvalidEndpoint", `Unknown request URL: ${method} ${path}.`)))
  }
  if (path === VIDEOS_PATH) {
    if (method === "POST") return openai((_, ctx) => createVideo(request, ctx, jobs))
    if (method === "GET") return openai((_, ctx) => listVideos(request, ctx, jobs))
  }
  if (path.startsWith(`${VIDEOS_PATH}/`)) {
    const rest = path.slice(VIDEOS_PATH.length + 1)
    const content = rest.endsWith("/content") ? segment(rest.slice(0, -"/content".length)) : undefined
    if (content !== undefined && (method === "GET" || method === "HEAD")) {
      return openai((_, ctx) => videoContent(request, ctx, jobs, content))
    }
    const id = segment(rest)
    if (id !== undefined && method === "GET") return openai((_, ctx) => getVideo(request, ctx, jobs, id))
    if (id !== undefined && method === "DELETE") return openai((_, ctx) => deleteVideo(request, ctx, jobs, id))
  }
  return undefined
}
