/**
 * What the gateways need to know about media files they bill by: an audio file's length, a video file's size and
 * length. A port, provided by the media adapters, so `app` does not parse containers itself.
 */
import type { VideoUsage } from "@tollgate/plugin-spec"
import { Context, type Effect } from "effect"

export interface VideoFile {
  readonly _tag: "Read"
  readonly width: number
  readonly height: number
  readonly durationSeconds: number
  readonly hasAudio: boolean
  /** Tokens by the formula on the file's pixels and length, for upstreams that report none. */
  readonly usage: VideoUsage
}

export class MediaProbe extends Context.Service<
  MediaProbe,
  {
    /** The audio's length in milliseconds, or null when the file does not say. */
    readonly audioMillis: (data: Uint8Array, filename?: string) => Effect.Effect<number | null>
    /** The longest an audio file of `bytes` can last (at the lowest bitrate billed): the hold when unmeasured. */
    readonly audioUpperBoundMillis: (bytes: number) => number
    /**
     * A finished video's picture and length, from the head of the file, with its tokens by the formula on them; or
     * why the file cannot be read as an MP4.
     */
    readonly video: (head: Uint8Array) => VideoFile | { readonly _tag: "Unreadable"; readonly message: string }
  }
>()("tollgate/app/ports/MediaProbe") {}
