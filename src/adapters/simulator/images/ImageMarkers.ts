/**
 * Per-request image knobs written into the prompt as `[sim:…]` markers. A marker travels through the gateway inside
 * the prompt, where an `x-sim-fault` header would not, so gateway tests can steer the upstream reply per request.
 *
 * | marker | effect |
 * |---|---|
 * | `[sim:text-only]` | Gemini: a caption and no image (finishReason STOP) |
 * | `[sim:images=N]` | Gemini: N images (1..8) in one reply |
 * | `[sim:safety]` / `[sim:image-safety]` | Gemini: candidate with finishReason `SAFETY` / `IMAGE_SAFETY`, no content |
 * | `[sim:blocked]` | Gemini: no candidates, `promptFeedback.blockReason: "SAFETY"` |
 * | `[sim:moderation]` | OpenAI images: 400 `moderation_blocked` |
 * | `[sim:noisy]` | both: incompressible pixels, so each PNG is several megabytes |
 */

export interface ImageMarkers {
  readonly textOnly: boolean
  /** Images per Gemini reply; undefined when not asked. */
  readonly images: number | undefined
  readonly finishReason: "SAFETY" | "IMAGE_SAFETY" | undefined
  readonly blocked: boolean
  readonly moderation: boolean
  readonly noisy: boolean
}

export const MAX_IMAGES_PER_REPLY = 8

const MARKER = /\[sim:([a-z-]+)(?:=(\d+))?\]/gi

export const readMarkers = (prompt: string): ImageMarkers => {
  const found = new Map<string, string | undefined>()
  for (const match of prompt.matchAll(MARKER)) found.set(match[1]!.toLowerCase(), match[2])
  const images = found.get("images")
  return {
    textOnly: found.has("text-only"),
    images:
      images === undefined ? undefined : Math.min(MAX_IMAGES_PER_REPLY, Math.max(1, Number.parseInt(images, 10) || 1)),
    finishReason: found.has("image-safety") ? "IMAGE_SAFETY" : found.has("safety") ? "SAFETY" : undefined,
    blocked: found.has("blocked"),
    moderation: found.has("moderation"),
    noisy: found.has("noisy")
  }
}

/** The prompt without its markers, for captions and seeds that should not depend on the knobs. */
export const stripMarkers = (prompt: string): string => prompt.replace(MARKER, "").replace(/\s+/g, " ").trim()
