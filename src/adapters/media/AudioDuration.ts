/**
 * The length of an uploaded audio file, for transcription holds and as the billing fallback when an upstream reports
 * none. Parsing is `music-metadata` (pure JS: wav, mp3, flac, ogg/opus, m4a/mp4, webm, aac, …), content-sniffed first
 * so a wrong client MIME type or filename cannot pick the wrong parser; the filename is a second try for formats with
 * weak signatures. This module is the edge around that promise-based library.
 */
import { Effect } from "effect"
import type { IAudioMetadata } from "music-metadata"

/** The lowest bit rate assumed when the length cannot be read: 8 kbps, below any speech codec in common use. */
export const MIN_BITS_PER_SECOND = 8_000

/** A conservative length for `bytes` of audio that could not be read: as if encoded at {@link MIN_BITS_PER_SECOND}. */
export const upperBoundMillis = (bytes: number): number =>
  Math.ceil((Math.max(0, bytes) * 8 * 1000) / MIN_BITS_PER_SECOND)

const OPTIONS = { duration: true, skipCovers: true, skipPostHeaders: true } as const

const millisOf = (metadata: IAudioMetadata): number | null => {
  const seconds = metadata.format.duration
  if (seconds === undefined || !Number.isFinite(seconds) || seconds <= 0) return null
  return Math.ceil(seconds * 1000 - 1e-6)
}

const parsed = (data: Uint8Array, fileInfo?: { readonly path: string }): Effect.Effect<number | null> =>
  Effect.tryPromise(() =>
    // Loaded on the first transcription that needs it, not at start.
    import("music-metadata").then(({ parseBuffer }) =>
      parseBuffer(data, fileInfo === undefined ? undefined : { ...fileInfo, size: data.byteLength }, OPTIONS)
    )
  ).pipe(
    Effect.map(millisOf),
    Effect.orElseSucceed(() => null)
  )

/** The audio's length in milliseconds (rounded up), or null when the file cannot be read as audio. */
export const audioDurationMillis = (data: Uint8Array, filename?: string): Effect.Effect<number | null> =>
  Effect.flatMap(parsed(data), (millis) =>
    millis !== null || filename === undefined || filename === ""
      ? Effect.succeed(millis)
      : parsed(data, { path: filename })
  )
