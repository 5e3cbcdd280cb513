/** What an MP4 on disk really holds, read by the ffprobe binary of `@ffprobe-installer/ffprobe`. */
import { execFile } from "node:child_process"
import ffprobe from "@ffprobe-installer/ffprobe"

export interface ProbeInfo {
  /** The container's duration. */
  readonly durationSeconds: number
  readonly video: {
    readonly codec: string
    readonly width: number
    readonly height: number
    readonly frames?: number
    readonly pixelFormat?: string
    readonly fps?: number
  }
  readonly audio: { readonly codec: string } | null
}

interface Stream {
  readonly codec_type?: string
  readonly codec_name?: string
  readonly width?: number
  readonly height?: number
  readonly nb_frames?: string
  readonly pix_fmt?: string
  readonly r_frame_rate?: string
}

interface ProbeJson {
  readonly streams?: ReadonlyArray<Stream>
  readonly format?: { readonly duration?: string }
}

const rate = (value: string | undefined): number | undefined => {
  const [num, den] = (value ?? "").split("/").map(Number)
  return num !== undefined && den !== undefined && den > 0 ? num / den : undefined
}

export const probe = (path: string): Promise<ProbeInfo> =>
  new Promise((resolve, reject) => {
    execFile(
      ffprobe.path,
      ["-v", "error", "-show_streams", "-show_format", "-of", "json", path],
      { maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null) {
          reject(new Error(`ffprobe failed on ${path}: ${stderr || error.message}`))
          return
        }
        const json = JSON.parse(stdout) as ProbeJson
        const streams = json.streams ?? []
        const video = streams.find((stream) => stream.codec_type === "video")
        const audio = streams.find((stream) => stream.codec_type === "audio")
        if (video === undefined) {
          reject(new Error(`ffprobe found no video stream in ${path}`))
          return
        }
        const frames = video.nb_frames === undefined ? undefined : Number(video.nb_frames)
        const fps = rate(video.r_frame_rate)
        resolve({
          durationSeconds: Number(json.format?.duration ?? Number.NaN),
          video: {
            codec: video.codec_name ?? "",
            width: video.width ?? 0,
            height: video.height ?? 0,
            ...(frames === undefined || Number.isNaN(frames) ? {} : { frames }),
            ...(video.pix_fmt === undefined ? {} : { pixelFormat: video.pix_fmt }),
            ...(fps === undefined ? {} : { fps })
          },
          audio: audio === undefined ? null : { codec: audio.codec_name ?? "" }
        })
      }
    )
  })
