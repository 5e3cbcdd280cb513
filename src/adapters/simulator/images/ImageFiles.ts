/**
 * Real image files for the simulator: deterministic PNGs drawn with pngjs, and the few header reads needed to learn
 * an input image's type and size (PNG, JPEG, WebP, HEIF/HEIC) without decoding it.
 */
import { createHash } from "node:crypto"
import jpeg from "jpeg-js"
import { PNG } from "pngjs"

export interface ImageSize {
  readonly width: number
  readonly height: number
}

export interface DrawOptions {
  /** Same seed, same picture. */
  readonly seed: string
  /** Transparent corners and a translucent backdrop (an RGBA PNG) instead of an opaque RGB one. */
  readonly transparent?: boolean | undefined
  /** Fill the low bits with noise so the file does not compress: multi-megabyte images for buffer-limit tests. */
  readonly noisy?: boolean | undefined
}

/** The longest edge the simulator draws, so a typo in a size cannot ask for gigabytes. */
export const MAX_EDGE = 8192

/**
 * A PNG of exactly `width` × `height`: a diagonal gradient between two colours from the seed, a checker of a third
 * colour and a disc, so two seeds give visibly different images.
 */
export const drawPng = (size: ImageSize, options: DrawOptions): Buffer => {
  const { width, height } = size
  const hash = createHash("sha256").update(options.seed).digest()
  const [r0, g0, b0, r1, g1, b1, r2, g2, b2] = hash
  const cell = 32 + (hash[9]! % 96)
  const cx = ((hash[10]! / 255) * 0.6 + 0.2) * width
  const cy = ((hash[11]! / 255) * 0.6 + 0.2) * height
  const radius = Math.min(width, height) * (0.15 + (hash[12]! / 255) * 0.2)
  const png = new PNG({ width, height })
  const data = png.data
  const span = Math.max(1, width + height - 2)
  let noise = hash.readUInt32LE(13) | 1
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4
      const t = (x + y) / span
      const inDisc = (x - cx) * (x - cx) + (y - cy) * (y - cy) <= radius * radius
      const checker = ((Math.floor(x / cell) + Math.floor(y / cell)) & 1) === 1
      let r = r0! + (r1! - r0!) * t
      let g = g0! + (g1! - g0!) * t
      let b = b0! + (b1! - b0!) * t
      if (inDisc) {
        r = 255 - r2!
        g = 255 - g2!
        b = 255 - b2!
      } else if (checker) {
        r = (r + r2!) / 2
        g = (g + g2!) / 2
        b = (b + b2!) / 2
      }
      if (options.noisy === true) {
        // xorshift32: cheap, deterministic, and enough to defeat deflate.
        noise ^= noise << 13
        noise ^= noise >>> 17
        noise ^= noise << 5
        r = (r & 0xf0) | (noise & 0x0f)
        g = (g & 0xf0) | ((noise >>> 4) & 0x0f)
        b = (b & 0xf0) | ((noise >>> 8) & 0x0f)
      }
      data[i] = r
      data[i + 1] = g
      data[i + 2] = b
      data[i + 3] = options.transparent === true && !inDisc ? (checker ? 0 : 128) : 255
    }
  }
  // The sub filter suits horizontal gradients and is several times faster than pngjs's adaptive choice.
  return PNG.sync.write(png, { colorType: options.transparent === true ? 6 : 2, filterType: 1 })
}

/** The same picture as {@link drawPng}, encoded as a baseline JPEG (no alpha: JPEG has none). */
export const drawJpeg = (size: ImageSize, options: DrawOptions & { readonly quality?: number }): Buffer => {
  const png = PNG.sync.read(drawPng(size, { ...options, transparent: false }))
  return jpeg.encode({ data: png.data, width: png.width, height: png.height }, options.quality ?? 90).data
}

export type ImageMime = "image/png" | "image/jpeg" | "image/webp" | "image/heic" | "image/heif" | "image/gif"

const startsWith = (bytes: Uint8Array, prefix: ReadonlyArray<number>, at = 0): boolean =>
  bytes.length >= at + prefix.length && prefix.every((byte, i) => bytes[at + i] === byte)

const ascii = (bytes: Uint8Array, at: number, length: number): string =>
  String.fromCharCode(...bytes.subarray(at, at + length))

/** The image type from the file's magic bytes, or undefined for anything else. */
export const sniffImageType = (bytes: Uint8Array): ImageMime | undefined => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "image/png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "image/jpeg"
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 4) === "WEBP") return "image/webp"
  if (ascii(bytes, 0, 4) === "GIF8") return "image/gif"
  if (bytes.length >= 12 && ascii(bytes, 4, 4) === "ftyp") {
    const brand = ascii(bytes, 8, 4)
    if (["heic", "heix", "heim", "heis", "hevc", "hevx"].includes(brand)) return "image/heic"
    if (["mif1", "msf1", "avif"].includes(brand)) return "image/heif"
  }
  return undefined
}

const u16be = (bytes: Uint8Array, at: number): number => (bytes[at]! << 8) | bytes[at + 1]!
const u32be = (bytes: Uint8Array, at: number): number => u16be(bytes, at) * 65536 + u16be(bytes, at + 2)
const u16le = (bytes: Uint8Array, at: number): number => bytes[at]! | (bytes[at + 1]! << 8)
const u24le = (bytes: Uint8Array, at: number): number => u16le(bytes, at) | (bytes[at + 2]! << 16)

const pngSize = (bytes: Uint8Array): ImageSize | undefined =>
  bytes.length >= 24 && ascii(bytes, 12, 4) === "IHDR"
    ? { width: u32be(bytes, 16), height: u32be(bytes, 20) }
    : undefined

// Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but are not frames.
const isStartOfFrame = (marker: number): boolean =>
  marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc

const jpegSize = (bytes: Uint8Array): ImageSize | undefined => {
  let at = 2
  while (at + 9 < bytes.length) {
    if (bytes[at] !== 0xff) return undefined
    const marker = bytes[at + 1]!
    if (marker === 0xff) {
      at += 1
      continue
    }
    if (marker === 0xd8 || (marker >= 0xd0 && marker <= 0xd7) || marker === 0x01) {
      at += 2
      continue
    }
    if (isStartOfFrame(marker)) return { width: u16be(bytes, at + 7), height: u16be(bytes, at + 5) }
    at += 2 + u16be(bytes, at + 2)
  }
  return undefined
}

const webpSize = (bytes: Uint8Array): ImageSize | undefined => {
  const chunk = ascii(bytes, 12, 4)
  if (chunk === "VP8 " && bytes.length >= 30) {
    return { width: u16le(bytes, 26) & 0x3fff, height: u16le(bytes, 28) & 0x3fff }
  }
  if (chunk === "VP8L" && bytes.length >= 25) {
    const bits = bytes[21]! | (bytes[22]! << 8) | (bytes[23]! << 16) | (bytes[24]! << 24)
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 }
  }
  if (chunk === "VP8X" && bytes.length >= 30) return { width: u24le(bytes, 24) + 1, height: u24le(bytes, 27) + 1 }
  return undefined
}

// HEIF keeps the size in an `ispe` box (4 bytes version and flags, then width and height) inside the item properties.
const heifSize = (bytes: Uint8Array): ImageSize | undefined => {
  const end = Math.min(bytes.length - 16, 256 * 1024)
  for (let at = 4; at < end; at++) {
    if (bytes[at] === 0x69 && bytes[at + 1] === 0x73 && bytes[at + 2] === 0x70 && bytes[at + 3] === 0x65) {
      return { width: u32be(bytes, at + 8), height: u32be(bytes, at + 12) }
    }
  }
  return undefined
}

/** Width and height from the file header; undefined when the bytes are not a readable PNG/JPEG/WebP/HEIF. */
export const readImageSize = (bytes: Uint8Array): ImageSize | undefined => {
  const size = (() => {
    switch (sniffImageType(bytes)) {
      case "image/png":
        return pngSize(bytes)
      case "image/jpeg":
        return jpegSize(bytes)
      case "image/webp":
        return webpSize(bytes)
      case "image/heic":
      case "image/heif":
        return heifSize(bytes)
      default:
        return undefined
    }
  })()
  return size !== undefined && size.width > 0 && size.height > 0 ? size : undefined
}

/** `long` on the longer edge, the other edge scaled to keep `ratio` (width / height), at least 1 pixel. */
export const fitLongEdge = (ratio: number, long: number): ImageSize =>
  ratio >= 1
    ? { width: long, height: Math.max(1, Math.round(long / ratio)) }
    : { width: Math.max(1, Math.round(long * ratio)), height: long }
