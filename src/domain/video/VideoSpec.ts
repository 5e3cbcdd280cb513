/**
 * What a video request is, once validated, and how many tokens it costs. Pure: the submit validator, the pricing
 * rule, the upstream adapters and the simulator all read the same table, so a hold, an upstream's `size` and the
 * pixels of the delivered file agree.
 *
 * Tokens = width × height × frames / 1024 with frames = 24 × seconds + 1 (docs/api/videos.md: this matches the
 * vendor's reported `completion_tokens` exactly, where the naive `× 24 × seconds` does not).
 */

export const VIDEO_RESOLUTIONS = ["480p", "720p", "1080p"] as const
export type VideoResolution = (typeof VIDEO_RESOLUTIONS)[number]

export const VIDEO_RATIOS = ["16:9", "9:16", "1:1", "4:3", "3:4", "21:9"] as const
export type VideoRatio = (typeof VIDEO_RATIOS)[number]

export const VIDEO_INPUT_TYPES = ["text_to_video", "first_last_frame", "reference"] as const
export type VideoInputType = (typeof VIDEO_INPUT_TYPES)[number]

export const MIN_VIDEO_SECONDS = 4
export const MAX_VIDEO_SECONDS = 15
export const MAX_VIDEO_IMAGES = 9
export const MAX_VIDEO_CLIPS = 3
export const VIDEO_FPS = 24

/** Used when the request leaves them out: the upstream vendor's own defaults (Ark: 5 s, 720p, 16:9). */
export const DEFAULT_VIDEO_SECONDS = 5
export const DEFAULT_VIDEO_RESOLUTION: VideoResolution = "720p"
export const DEFAULT_VIDEO_RATIO: VideoRatio = "16:9"

export interface PixelSize {
  readonly width: number
  readonly height: number
}

/**
 * Output pixel sizes. The newest model generation's documented size where the vendor lists one (480p 16:9
 * 864×496, 720p 16:9 1280×720, 720p 9:16 720×1280, 720p 1:1 960×960, 1080p 16:9 1920×1088, 720p 21:9 1470×630);
 * elsewhere the vendor's documented size for that resolution and ratio. Every side is even (H.264 4:2:0 needs it).
 */
export const PIXEL_SIZES: { readonly [R in VideoResolution]: { readonly [A in VideoRatio]: PixelSize } } = {
  "480p": {
    "16:9": { width: 864, height: 496 },
    "9:16": { width: 496, height: 864 },
    "1:1": { width: 640, height: 640 },
    "4:3": { width: 752, height: 560 },
    "3:4": { width: 560, height: 752 },
    "21:9": { width: 992, height: 432 }
  },
  "720p": {
    "16:9": { width: 1280, height: 720 },
    "9:16": { width: 720, height: 1280 },
    "1:1": { width: 960, height: 960 },
    "4:3": { width: 1112, height: 834 },
    "3:4": { width: 834, height: 1112 },
    "21:9": { width: 1470, height: 630 }
  },
  "1080p": {
    "16:9": { width: 1920, height: 1088 },
    "9:16": { width: 1088, height: 1920 },
    "1:1": { width: 1440, height: 1440 },
    "4:3": { width: 1664, height: 1248 },
    "3:4": { width: 1248, height: 1664 },
    "21:9": { width: 2176, height: 928 }
  }
}

export const pixelSize = (resolution: VideoResolution, ratio: VideoRatio): PixelSize => PIXEL_SIZES[resolution][ratio]

/** The (resolution, ratio) whose pixel size is exactly `width`×`height`, if any: maps an upstream's `size` back. */
export const sizeKeyOf = (
  width: number,
  height: number
): { readonly resolution: VideoResolution; readonly ratio: VideoRatio } | undefined => {
  for (const resolution of VIDEO_RESOLUTIONS) {
    for (const ratio of VIDEO_RATIOS) {
      const size = PIXEL_SIZES[resolution][ratio]
      if (size.width === width && size.height === height) return { resolution, ratio }
    }
  }
  return undefined
}

export const framesFor = (seconds: number): number => VIDEO_FPS * seconds + 1

/** Video tokens for a clip of this size and length, rounded up (bigint: 1080p × 15 s is ~740k, exact either way). */
export const videoTokens = (size: PixelSize, seconds: number): bigint => {
  const pixels = BigInt(size.width) * BigInt(size.height) * BigInt(framesFor(seconds))
  return (pixels + 1023n) / 1024n
}

/** A validated video request: what the plugins and the simulator receive. */
export interface VideoRequest {
  readonly prompt: string
  readonly seconds: number
  readonly resolution: VideoResolution
  readonly ratio: VideoRatio
  readonly inputType: VideoInputType
  /** Public image links (jpg/png/webp), in order: for `first_last_frame` the first is the start frame. */
  readonly images: ReadonlyArray<string>
  /** Public MP4 links. */
  readonly videos: ReadonlyArray<string>
}
