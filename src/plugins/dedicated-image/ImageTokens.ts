/**
 * Output image tokens per image for holds (OpenAI's published image-token table). The dedicated model bills what the upstream reports in
 * `usage.output_tokens`; these numbers only size the hold, so where two published tables disagree the larger wins.
 * `auto` quality is held as `high` and `auto` size as 1024x1024.
 */

const QUALITY_FACTOR: Readonly<Record<string, number>> = { low: 16, medium: 48, high: 96 }

/** gpt-image-1's published table, for the three standard sizes. */
const LEGACY_TABLE: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  low: { "1024x1024": 272, "1024x1536": 408, "1536x1024": 400 },
  medium: { "1024x1024": 1056, "1024x1536": 1584, "1536x1024": 1568 },
  high: { "1024x1024": 4160, "1024x1536": 6240, "1536x1024": 6208 }
}

export interface ImageSize {
  readonly width: number
  readonly height: number
}

export const DEFAULT_SIZE: ImageSize = { width: 1024, height: 1024 }

/** `1536x1024` → its dimensions; `auto` or nothing → undefined. */
export const parseSize = (size: string | undefined): ImageSize | undefined => {
  if (size === undefined || size === "auto") return undefined
  const match = /^([0-9]{2,5})x([0-9]{2,5})$/.exec(size)
  if (match === null) return undefined
  return { width: Number(match[1]), height: Number(match[2]) }
}

export const holdQuality = (quality: string | undefined): "low" | "medium" | "high" =>
  quality === "low" || quality === "medium" ? quality : "high"

/** `numerator / denominator` rounded to the nearest integer, ties to even. */
const roundHalfEven = (numerator: number, denominator: number): number => {
  const floor = Math.floor(numerator / denominator)
  const twice = 2 * (numerator - floor * denominator)
  if (twice > denominator) return floor + 1
  if (twice < denominator) return floor
  return floor % 2 === 0 ? floor : floor + 1
}

/** gpt-image-2's calculator as reconstructed from OpenAI's published token counts: `ceil(q · s · (2e6 + w·h) / 4e6)`. */
export const formulaTokens = (quality: "low" | "medium" | "high", size: ImageSize): number => {
  const q = QUALITY_FACTOR[quality]
  const long = Math.max(size.width, size.height)
  const short = Math.min(size.width, size.height)
  const s = roundHalfEven(q * short, long)
  return Math.ceil((q * s * (2_000_000 + size.width * size.height)) / 4_000_000)
}

/** Output tokens held for one image of this size and quality. */
export const imageTokensForHold = (size: string | undefined, quality: string | undefined): number => {
  const q = holdQuality(quality)
  const parsed = parseSize(size) ?? DEFAULT_SIZE
  const legacy = LEGACY_TABLE[q][`${parsed.width}x${parsed.height}`] ?? 0
  return Math.max(legacy, formulaTokens(q, parsed))
}

/** Input tokens held per input image (or mask) of an edit; settlement uses the upstream's count. */
export const INPUT_IMAGE_TOKENS = 1_600
