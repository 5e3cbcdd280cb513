/**
 * What the gateway checks of video input links before it holds anything (docs/videos.md: publicly reachable JPG, PNG or
 * WebP images, MP4 videos). The vendor fetches them, not the gateway, but a link to the gateway's own network must not
 * leave it: every link goes through the guarded fetcher's address rule (the one image links follow), which a quick HEAD
 * also puts to the test on every redirect and every address the name resolves to. Where that HEAD answers 2xx, its
 * content type must be one the spec names.
 *
 * A link whose own name already rules it out (`frame.gif`, `clip.mov`: a file extension naming a format the spec does
 * not take) is refused before any network call, whether or not its host would answer.
 *
 * A HEAD that cannot say (a timeout, a refused connection, a name that does not resolve here, a 405 or any other
 * non-2xx, no content type or a generic binary one) does not refuse the link: many object stores and CDNs answer HEAD
 * badly, and the vendor judges the link itself when it fetches it, failing the task (with a full refund) if it cannot.
 */
import { Effect } from "effect"
import type { FetchRefused, FetchRefusedReason } from "../app/ports/FetchRefused.ts"
import type { GuardedFetcher } from "./ports/GuardedFetcher.ts"
import type { VideoRequest } from "../domain/video/VideoSpec.ts"
import { InvalidChatRequest } from "./ChatErrors.ts"

/** How long a submit waits for each link's HEAD (they run side by side). */
export const VIDEO_LINK_PROBE_MS = 3_000

/** Media types that say nothing about the format: the link is passed on for the vendor to judge. */
const UNSPECIFIC_TYPES = new Set(["", "application/octet-stream", "binary/octet-stream"])

interface LinkFormat {
  readonly field: "images" | "videos"
  readonly types: ReadonlySet<string>
  /** File extensions of the formats taken (lower case, without the dot). */
  readonly extensions: ReadonlySet<string>
  readonly expected: string
}

/**
 * Extensions that name a media format for certain. One of these on a link's path that its field does not take
 * refuses the link; any other extension (or none: many CDN links have none) says nothing, and the HEAD decides.
 */
const MEDIA_EXTENSIONS = new Set([
  ...["jpg", "jpeg", "png", "webp", "gif", "bmp", "tif", "tiff", "heic", "heif", "avif", "svg", "ico"],
  ...["mp4", "mov", "qt", "webm", "avi", "mkv", "wmv", "flv", "3gp", "mpg", "mpeg", "ogv", "m2ts", "mts"]
])

/** The lower-case extension of a link's last path segment, or undefined (no extension, or not a URL). */
const extensionOf = (link: string): string | undefined => {
  if (!URL.canParse(link)) return undefined
  const segment = new URL(link).pathname.split("/").at(-1) ?? ""
  const dot = segment.lastIndexOf(".")
  return dot <= 0 ? undefined : segment.slice(dot + 1).toLowerCase()
}

const IMAGE_FORMAT: LinkFormat = {
  field: "images",
  // `image/jpg` is not registered, but servers send it for JPEG files.
  types: new Set(["image/jpeg", "image/jpg", "image/png", "image/webp"]),
  extensions: new Set(["jpg", "jpeg", "png", "webp"]),
  expected: "a JPG, PNG or WebP image (image/jpeg, image/png or image/webp)"
}

const VIDEO_FORMAT: LinkFormat = {
  field: "videos",
  types: new Set(["video/mp4"]),
  extensions: new Set(["mp4"]),
  expected: "an MP4 video (video/mp4)"
}

/** Refusals that are about the link itself, not about whether its server answered. */
const REFUSED_LINK: ReadonlySet<FetchRefusedReason> = new Set([
  "invalid-url",
  "scheme",
  "credentials",
  "blocked-host",
  "blocked-address"
])

/** Why the link is refused, or undefined when it passes (or its HEAD could not tell). */
const verdict = (
  fetcher: GuardedFetcher["Service"],
  format: LinkFormat,
  link: string
): Effect.Effect<string | undefined> => {
  const extension = extensionOf(link)
  if (extension !== undefined && MEDIA_EXTENSIONS.has(extension) && !format.extensions.has(extension)) {
    return Effect.succeed(`the link names a .${extension} file, not ${format.expected}`)
  }
  return fetcher.probe(link, VIDEO_LINK_PROBE_MS).pipe(
    Effect.map((probed) =>
      probed.status >= 200 && probed.status < 300 && !UNSPECIFIC_TYPES.has(probed.contentType)
        ? format.types.has(probed.contentType)
          ? undefined
          : `the link serves ${probed.contentType}, not ${format.expected}`
        : undefined
    ),
    Effect.catch((refused: FetchRefused) =>
      Effect.succeed(
        REFUSED_LINK.has(refused.reason) ? `${refused.detail}; video inputs must be publicly reachable URLs` : undefined
      )
    )
  )
}

/**
 * Checks every image and clip link of a request side by side; fails with the first refused one in request order,
 * naming it (`metadata.images[1]`).
 */
export const checkVideoInputLinks = (
  fetcher: GuardedFetcher["Service"],
  request: Pick<VideoRequest, "images" | "videos">
): Effect.Effect<void, InvalidChatRequest> => {
  const links = [
    ...request.images.map((link, index) => ({ format: IMAGE_FORMAT, link, index })),
    ...request.videos.map((link, index) => ({ format: VIDEO_FORMAT, link, index }))
  ]
  if (links.length === 0) return Effect.void
  return Effect.gen(function* () {
    const verdicts = yield* Effect.forEach(links, ({ format, link }) => verdict(fetcher, format, link), {
      concurrency: "unbounded"
    })
    const refused = verdicts.findIndex((message) => message !== undefined)
    if (refused < 0) return
    const { format, index } = links[refused]!
    return yield* new InvalidChatRequest({
      param: `metadata.${format.field}[${index}]`,
      message: verdicts[refused]!
    })
  })
}
