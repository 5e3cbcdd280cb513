/**
 * Reads what billing needs from an MP4's bytes: the presentation length (`mvhd`), the video track's size (`tkhd`) and
 * whether an audio track exists (`hdlr` = `soun`). A small box walker rather than a demuxer library: three fields of the
 * `moov` box do not justify a browser-oriented demuxer with an event API (mp4box). Every read is bounds-checked
 * against the box that holds it, so hostile or truncated input ends in an {@link Mp4InfoError}, never a throw.
 */
import { Schema } from "effect"
import { type PixelSize, videoTokens } from "../../domain/video/VideoSpec.ts"

export interface Mp4Info {
  readonly _tag: "Mp4Info"
  /** Presentation length in seconds (`mvhd` duration / timescale; `mehd` for fragmented files). */
  readonly durationSeconds: number
  /** The first video track's presentation size in pixels (`tkhd`, 16.16 fixed point, rounded). */
  readonly width: number
  readonly height: number
  readonly hasAudio: boolean
}

export class Mp4InfoError extends Schema.TaggedError<Mp4InfoError>()("Mp4InfoError", {
  reason: Schema.String
}) {
  override get message(): string {
    return `not a readable MP4: ${this.reason}`
  }
}

/** A box's payload: `[start, end)` in the file's bytes, after its header. */
interface Box {
  readonly type: string
  readonly start: number
  readonly end: number
}

/** Boxes an MP4 (or a QuickTime file without `ftyp`) can start with; anything else is not one. */
const FIRST_BOX_TYPES = new Set([
  "ftyp",
  "styp",
  "moov",
  "mdat",
  "free",
  "skip",
  "wide",
  "pdin",
  "uuid",
  "meta",
  "moof"
])

const isBoxType = (type: string): boolean => /^[\x20-\x7e]{4}$/.test(type)

const fourcc = (bytes: Uint8Array, at: number): string =>
  String.fromCharCode(bytes[at] ?? 0, bytes[at + 1] ?? 0, bytes[at + 2] ?? 0, bytes[at + 3] ?? 0)

/** The child boxes in `[start, end)`, or the reason they cannot be walked. */
const childrenOf = (bytes: Uint8Array, view: DataView, start: number, end: number): ReadonlyArray<Box> | string => {
  const boxes: Array<Box> = []
  let at = start
  while (at < end) {
    if (end - at < 8) return `truncated box header at byte ${at}`
    const size32 = view.getUint32(at)
    const type = fourcc(bytes, at + 4)
    if (!isBoxType(type)) return `invalid box type at byte ${at}`
    let header = 8
    let size: number
    if (size32 === 1) {
      if (end - at < 16) return `truncated 64-bit box size at byte ${at}`
      const large = view.getBigUint64(at + 8)
      if (large > BigInt(Number.MAX_SAFE_INTEGER)) return `box '${type}' is too large`
      size = Number(large)
      header = 16
    } else if (size32 === 0) {
      // Size 0: the box runs to the end of its container (usually a trailing mdat).
      size = end - at
    } else {
      size = size32
    }
    if (size < header) return `box '${type}' at byte ${at} is smaller than its header`
    if (size > end - at) return `box '${type}' at byte ${at} runs past the end of its container`
    boxes.push({ type, start: at + header, end: at + size })
    at += size
  }
  return boxes
}

/** A full box's version byte (0: 32-bit times and durations, 1: 64-bit); callers check the payload's length. */
const versionOf = (bytes: Uint8Array, box: Box): number => bytes[box.start] ?? 0

const readUint = (view: DataView, at: number, wide: boolean): number =>
  wide ? Number(view.getBigUint64(at)) : view.getUint32(at)

const ALL_ONES_32 = 0xffffffff

interface Movie {
  readonly timescale: number
  readonly duration: number | undefined
}

const movieHeader = (bytes: Uint8Array, view: DataView, box: Box): Movie | string => {
  const wide = versionOf(bytes, box) === 1
  const needs = wide ? 32 : 20
  if (box.end - box.start < needs) return "mvhd is truncated"
  const timescale = view.getUint32(box.start + (wide ? 20 : 12))
  const rawDuration = wide ? view.getBigUint64(box.start + 24) : BigInt(view.getUint32(box.start + 16))
  if (timescale === 0) return "mvhd has a zero timescale"
  const unknown = wide ? rawDuration === 0xffffffffffffffffn : rawDuration === BigInt(ALL_ONES_32)
  const duration =
    unknown || rawDuration === 0n || rawDuration > BigInt(Number.MAX_SAFE_INTEGER) ? undefined : Number(rawDuration)
  return { timescale, duration }
}

/** `mvex/mehd`: the whole length of a fragmented file, whose `mvhd` duration is 0. */
const fragmentDuration = (bytes: Uint8Array, view: DataView, mvex: Box): number | undefined => {
  const children = childrenOf(bytes, view, mvex.start, mvex.end)
  if (typeof children === "string") return undefined
  const mehd = children.find((box) => box.type === "mehd")
  if (mehd === undefined) return undefined
  const wide = versionOf(bytes, mehd) === 1
  if (mehd.end - mehd.start < (wide ? 12 : 8)) return undefined
  const value = readUint(view, mehd.start + 4, wide)
  return Number.isSafeInteger(value) && value > 0 ? value : undefined
}

interface Track {
  readonly handler: string | undefined
  readonly size: PixelSize | undefined
}

const trackOf = (bytes: Uint8Array, view: DataView, trak: Box): Track | string => {
  const children = childrenOf(bytes, view, trak.start, trak.end)
  if (typeof children === "string") return children
  let size: PixelSize | undefined
  let handler: string | undefined
  for (const box of children) {
    if (box.type === "tkhd") {
      const wide = versionOf(bytes, box) === 1
      const widthAt = box.start + (wide ? 88 : 76)
      if (widthAt + 8 > box.end) return "tkhd is truncated"
      size = {
        width: Math.round(view.getUint32(widthAt) / 65536),
        height: Math.round(view.getUint32(widthAt + 4) / 65536)
      }
    } else if (box.type === "mdia") {
      const media = childrenOf(bytes, view, box.start, box.end)
      if (typeof media === "string") return media
      const hdlr = media.find((child) => child.type === "hdlr")
      if (hdlr !== undefined) {
        if (hdlr.end - hdlr.start < 12) return "hdlr is truncated"
        handler = fourcc(bytes, hdlr.start + 8)
      }
    }
  }
  return { handler, size }
}

const failure = (reason: string) => new Mp4InfoError({ reason })

/** Duration, video size and audio presence of an MP4, or why the bytes are not one this reader understands. */
export const mp4Info = (bytes: Uint8Array): Mp4Info | Mp4InfoError => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const top = childrenOf(bytes, view, 0, bytes.byteLength)
  if (typeof top === "string") return failure(top)
  if (top.length === 0) return failure("empty input")
  const first = top[0] as Box
  if (!FIRST_BOX_TYPES.has(first.type)) {
    return failure(`unexpected first box '${first.type}'`)
  }
  const moov = top.find((box) => box.type === "moov")
  if (moov === undefined) return failure("no moov box")
  const children = childrenOf(bytes, view, moov.start, moov.end)
  if (typeof children === "string") return failure(children)
  const mvhd = children.find((box) => box.type === "mvhd")
  if (mvhd === undefined) return failure("no mvhd box")
  const movie = movieHeader(bytes, view, mvhd)
  if (typeof movie === "string") return failure(movie)
  const mvex = children.find((box) => box.type === "mvex")
  const duration = movie.duration ?? (mvex === undefined ? undefined : fragmentDuration(bytes, view, mvex))
  if (duration === undefined) return failure("the movie's duration is unknown")
  let video: PixelSize | undefined
  let hasAudio = false
  for (const trak of children) {
    if (trak.type !== "trak") continue
    const track = trackOf(bytes, view, trak)
    if (typeof track === "string") return failure(track)
    if (track.handler === "soun") hasAudio = true
    if (track.handler === "vide" && video === undefined) video = track.size
  }
  if (video === undefined) return failure("no video track with a track header")
  if (video.width === 0 || video.height === 0) return failure("the video track has no size")
  return {
    _tag: "Mp4Info",
    durationSeconds: duration / movie.timescale,
    width: video.width,
    height: video.height,
    hasAudio
  }
}

/**
 * The plugins' `VideoUsage` by the token formula on the delivered file, for upstreams that report no tokens. Spelled
 * out here because adapters do not import from plugins; the shapes are the same.
 */
export interface FileVideoUsage {
  readonly tokens: bigint
  readonly reported: boolean
}

export const usageFromFile = (info: Mp4Info): FileVideoUsage => ({
  tokens: videoTokens({ width: info.width, height: info.height }, Math.round(info.durationSeconds)),
  reported: false
})
