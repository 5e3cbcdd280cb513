/** The media port over this folder's parsers: audio length from the container, MP4 size and length for video tokens. */
import { Layer } from "effect"
import { MediaProbe } from "../../app/ports/MediaProbe.ts"
import { audioDurationMillis, upperBoundMillis } from "./AudioDuration.ts"
import { mp4Info, usageFromFile } from "./Mp4Info.ts"

export const layer = Layer.succeed(
  MediaProbe,
  MediaProbe.of({
    audioMillis: audioDurationMillis,
    audioUpperBoundMillis: upperBoundMillis,
    video: (head) => {
      const info = mp4Info(head)
      return info._tag === "Mp4Info"
        ? {
            _tag: "Read",
            width: info.width,
            height: info.height,
            durationSeconds: info.durationSeconds,
            hasAudio: info.hasAudio,
            usage: usageFromFile(info)
          }
        : { _tag: "Unreadable", message: info.message }
    }
  })
)
