/**
 * What `tollgate videos` sends and prints: the submit body built from the flags, and the task and list views. Pure,
 * so the layout is tested without a server.
 */
import { DateTime, Option } from "effect"
import type { VideoRatio, VideoResolution } from "../../domain/video/VideoSpec.ts"
import { type Column, renderFields, renderTable } from "../Table.ts"
import type { VideoCharge, VideoList, VideoTask } from "./VideosClient.ts"

export const defaultVideoModel = "video-model-2.0-fast"

export interface VideoCreateInput {
  readonly prompt: string
  readonly model: string
  readonly seconds: number
  readonly resolution: VideoResolution
  readonly ratio: VideoRatio
  readonly images: ReadonlyArray<string>
  readonly videos: ReadonlyArray<string>
}

/** The JSON form of docs/api/videos.md: `seconds` as a string, links only when given (the server infers `input_type`). */
export const videoCreateBody = (input: VideoCreateInput) => ({
  model: input.model,
  prompt: input.prompt,
  seconds: String(input.seconds),
  metadata: {
    resolution: input.resolution,
    ratio: input.ratio,
    ...(input.images.length === 0 ? {} : { images: [...input.images] }),
    ...(input.videos.length === 0 ? {} : { videos: [...input.videos] })
  }
})

const none = "-"
const orNone = (value: string | number | null | undefined) =>
  value === undefined || value === null || value === "" ? none : String(value)

/** Unix seconds as UTC ISO. */
export const unixTime = (seconds: number | null | undefined): string =>
  seconds === undefined || seconds === null
    ? none
    : Option.match(DateTime.make(seconds * 1000), { onNone: () => String(seconds), onSome: DateTime.formatIso })

/** `charged 0.150000 (held 0.152460, refunded 0.002460)`, once the hold is settled. */
export const chargeLine = (charge: VideoCharge | null | undefined): string | undefined => {
  if (charge === undefined || charge === null) return undefined
  if (charge.captured === undefined || charge.captured === null) {
    return charge.held === undefined || charge.held === null ? undefined : `held ${charge.held} (not settled yet)`
  }
  return `charged ${charge.captured} (held ${orNone(charge.held)}, refunded ${orNone(charge.refunded)})`
}

export const formatBytes = (bytes: number): string => {
  if (bytes < 1024) return `${bytes} B`
  const units = ["KiB", "MiB", "GiB"]
  let value = bytes / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit += 1
  }
  return `${value.toFixed(1)} ${units[unit]}`
}

export const savedLine = (path: string, bytes: number): string =>
  `saved ${path} (${formatBytes(bytes)}, ${bytes} bytes)`

export const submittedHint = (id: string): string =>
  `Submitted. Follow it with: tollgate videos get ${id} (or pass --wait to create)`

const errorText = (task: VideoTask) =>
  task.error === undefined || task.error === null
    ? none
    : [task.error.message, task.error.code === undefined || task.error.code === null ? "" : `(${task.error.code})`]
        .filter((part) => part !== undefined && part !== null && part !== "")
        .join(" ")

export const videoTaskView = (task: VideoTask): string => {
  const charge = chargeLine(task.charge)
  return renderFields([
    ["id", task.id],
    ["model", orNone(task.model)],
    ["status", task.status],
    ["progress", `${task.progress ?? 0}%`],
    ["seconds", orNone(task.seconds)],
    ["resolution", orNone(task.metadata?.resolution)],
    ["ratio", orNone(task.metadata?.ratio)],
    ["input type", orNone(task.metadata?.input_type)],
    ["created", unixTime(task.created_at)],
    ["completed", unixTime(task.completed_at)],
    ["expires", unixTime(task.expires_at)],
    ["url", orNone(task.metadata?.url)],
    ...(task.status === "failed" ? [["error", errorText(task)] as const] : []),
    ["charge", charge ?? none]
  ])
}

const listColumns: ReadonlyArray<Column<VideoTask>> = [
  { header: "ID", cell: (task) => task.id },
  { header: "MODEL", cell: (task) => orNone(task.model) },
  { header: "STATUS", cell: (task) => task.status },
  { header: "PROGRESS", align: "right", cell: (task) => `${task.progress ?? 0}%` },
  { header: "SECONDS", align: "right", cell: (task) => orNone(task.seconds) },
  { header: "CHARGED", align: "right", cell: (task) => orNone(task.charge?.captured) },
  { header: "CREATED", cell: (task) => unixTime(task.created_at) }
]

export const videoListView = (list: VideoList): string => {
  if (list.data.length === 0) return "No videos yet. Create one with: tollgate videos create --prompt <text>"
  const table = renderTable(listColumns, list.data)
  const last = list.last_id
  return list.has_more === true && last !== undefined && last !== null
    ? `${table}\nMore: tollgate videos list --after ${last}`
    : table
}

/** The failure reason of a failed task, whatever the server put in `error`. */
export const failureOf = (task: VideoTask): { readonly reason: string; readonly code: string | null } => ({
  reason: task.error?.message ?? "no reason given",
  code: task.error?.code ?? null
})
