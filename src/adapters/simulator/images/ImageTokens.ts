/**
 * Output token counts per generated image, from the vendors' published tables (Gemini image models)
 * and OpenAI's published token counts (GPT image models).
 */
import type { ImageSize } from "./ImageFiles.ts"

export type ImageQuality = "low" | "medium" | "high"

/** gpt-image-1 (and -mini, read as the same): three sizes only. */
const GPT_IMAGE_1: Readonly<Record<ImageQuality, Readonly<Record<string, number>>>> = {
  low: { "1024x1024": 272, "1024x1536": 408, "1536x1024": 400 },
  medium: { "1024x1024": 1056, "1024x1536": 1584, "1536x1024": 1568 },
  high: { "1024x1024": 4160, "1024x1536": 6240, "1536x1024": 6208 }
}

/** Models priced by the gpt-image-1 table; every other image model (gpt-image-2, `imggen-2`) uses the formula. */
export const usesGptImage1Table = (model: string): boolean => /image-1/.test(model)

const roundHalfEven = (value: number): number => {
  const floor = Math.floor(value)
  const diff = value - floor
  if (diff > 0.5) return floor + 1
  if (diff < 0.5) return floor
  return floor % 2 === 0 ? floor : floor + 1
}

const QUALITY_FACTOR: Readonly<Record<ImageQuality, number>> = { low: 16, medium: 48, high: 96 }

/** gpt-image-2's calculator: any size; 1024x1024 gives 196 / 1756 / 7024 for low / medium / high. */
export const gptImage2Tokens = (quality: ImageQuality, size: ImageSize): number => {
  const q = QUALITY_FACTOR[quality]
  const long = Math.max(size.width, size.height)
  const short = Math.min(size.width, size.height)
  const s = roundHalfEven(q / (long / short))
  return Math.ceil((q * s * (2_000_000 + size.width * size.height)) / 4_000_000)
}

/**
 * Output tokens of one image from a GPT image model. gpt-image-1 sizes outside its table are priced as the table size
 * of the same orientation.
 */
export const gptImageOutputTokens = (model: string, quality: ImageQuality, size: ImageSize): number => {
  if (!usesGptImage1Table(model)) return gptImage2Tokens(quality, size)
  const key = size.width === size.height ? "1024x1024" : size.width > size.height ? "1536x1024" : "1024x1536"
  return GPT_IMAGE_1[quality][key]!
}

/** Gemini image output: ≈1290 tokens per image on 2.5 Flash Image; 1120 (2000 at 4K) on the Gemini 3 image models. */
export const geminiImageTokens = (model: string, imageSize: string | undefined): number => {
  if (!/-3[.-]/.test(model)) return 1290
  return imageSize?.toUpperCase() === "4K" ? 2000 : 1120
}
