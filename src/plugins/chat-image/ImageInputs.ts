/**
 * Input images as the image families take them: data URIs decoded with a linear scan (payloads are often MBs), links
 * fetched through the gateway's guarded fetcher, and the type read from the bytes themselves, so a GIF labelled
 * `image/png` is refused as the GIF it is.
 */
import { Context, Effect, Layer } from "effect"
import { Buffer } from "node:buffer"
import { GuardedFetcher } from "../../app/ports/GuardedFetcher.ts"
import { type PluginFailure, pluginFailure } from "../ModelPlugin.ts"

/** The image types the chat-style image models accept. */
export const ACCEPTED_IMAGE_TYPES: ReadonlyArray<string> = [
  "image/png",
  "image/jpeg",
  "image/webp",
  "image/heic",
  "image/heif"
]

export interface FetchedImage {
  readonly bytes: Uint8Array
  /** The response's `content-type`, parameters included, when it sent one. */
  readonly contentType: string | undefined
}

/**
 * Fetches a user-supplied link. Implementations must refuse private, loopback, link-local and metadata addresses on
 * every redirect hop, cap the size and time, and fail with a 400 `PluginFailure` saying why.
 */
export type ImageFetcher = (url: string, signal: AbortSignal) => Effect.Effect<FetchedImage, PluginFailure>

/** An input image link may be at most this big and take this long; its type is sniffed from the bytes after. */
export const FETCH_LIMITS = {
  maxBytes: 20 * 1024 * 1024,
  timeoutMs: 15_000,
  accept: (contentType: string) =>
    contentType === "" || contentType.startsWith("image/") || contentType === "application/octet-stream"
}

/** The fetcher the built-in image plugins use, provided by the composition root (backed by the guarded fetcher). */
export class ImageFetcherService extends Context.Service<ImageFetcherService, ImageFetcher>()(
  "tollgate/plugins/ImageFetcher"
) {
  /** Links fetched through the guarded fetcher (public addresses only, every redirect hop checked, size and time capped). */
  static readonly layer = Layer.effect(
    ImageFetcherService,
    Effect.map(Effect.service(GuardedFetcher), (guarded) =>
      ImageFetcherService.of((url) =>
        guarded.fetch(url, FETCH_LIMITS).pipe(
          Effect.map((resource) => ({ bytes: resource.bytes, contentType: resource.contentType })),
          Effect.mapError((refused) =>
            pluginFailure("invalid_request", `input image link: ${refused.message}`, { code: "image_fetch_refused" })
          )
        )
      )
    )
  )

  /** Refuses every link: for builds and tests without the guarded fetcher. */
  static readonly refuseAll = Layer.succeed(
    ImageFetcherService,
    ImageFetcherService.of(() =>
      Effect.fail(
        pluginFailure("invalid_request", "image links are not fetched by this gateway; send the image as a data URI")
      )
    )
  )
}

/** One image ready for an upstream: its real type and its bytes as base64. */
export interface InlineImage {
  readonly mimeType: string
  readonly data: string
}

const ascii = (bytes: Uint8Array, start: number, end: number): string =>
  String.fromCharCode(...bytes.subarray(start, Math.min(end, bytes.length)))

const HEIC_BRANDS = new Set(["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs"])
const HEIF_BRANDS = new Set(["mif1", "msf1", "mif2"])

/** The type the leading bytes show, or undefined when they match no format this module knows. */
export const sniffImageType = (bytes: Uint8Array): string | undefined => {
  if (bytes.length >= 8 && bytes[0] === 0x89 && ascii(bytes, 1, 4) === "PNG") return "image/png"
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg"
  if (ascii(bytes, 0, 4) === "RIFF" && ascii(bytes, 8, 12) === "WEBP") return "image/webp"
  if (ascii(bytes, 0, 4) === "GIF8") return "image/gif"
  if (ascii(bytes, 4, 8) === "ftyp") {
    const brand = ascii(bytes, 8, 12)
    if (HEIC_BRANDS.has(brand)) return "image/heic"
    if (HEIF_BRANDS.has(brand)) return "image/heif"
    if (brand === "avif" || brand === "avis") return "image/avif"
    return undefined
  }
  if (ascii(bytes, 0, 2) === "BM") return "image/bmp"
  if (ascii(bytes, 0, 4) === "II*\u0000" || ascii(bytes, 0, 4) === "MM\u0000*") return "image/tiff"
  const head = ascii(bytes, 0, 256).trimStart().toLowerCase()
  if (head.startsWith("<svg") || (head.startsWith("<?xml") && head.includes("<svg"))) return "image/svg+xml"
  return undefined
}

/** `image/PNG; charset=x` → `image/png`. */
export const baseMimeType = (value: string): string => {
  const semicolon = value.indexOf(";")
  return (semicolon < 0 ? value : value.slice(0, semicolon)).trim().toLowerCase()
}

export const unsupportedType = (mimeType: string, where: string): PluginFailure =>
  pluginFailure(
    "invalid_request",
    `${where}: the mime type ${mimeType} is not supported; send ${ACCEPTED_IMAGE_TYPES.join(", ")}`,
    { code: "unsupported_mime_type", param: where }
  )

/** Decides the type of an input image from its bytes (trusted over the label) and checks it is accepted. */
export const checkedType = (
  bytes: Uint8Array,
  declared: string | undefined,
  where: string,
  accepted: ReadonlyArray<string> = ACCEPTED_IMAGE_TYPES
): Effect.Effect<string, PluginFailure> => {
  const label = declared === undefined || declared === "" ? undefined : baseMimeType(declared)
  const type = sniffImageType(bytes) ?? label
  if (type === undefined)
    return Effect.fail(
      pluginFailure("invalid_request", `${where}: the bytes are not a recognised image`, { param: where })
    )
  return accepted.includes(type) ? Effect.succeed(type) : Effect.fail(unsupportedType(type, where))
}

export interface DataUri {
  readonly mimeType: string
  /** The base64 payload, as sent. */
  readonly data: string
}

/** `data:<mime>[;params];base64,<payload>` → its parts; undefined when `url` is not a base64 data URI. */
export const parseDataUri = (url: string): DataUri | undefined => {
  if (!url.startsWith("data:")) return undefined
  const comma = url.indexOf(",")
  if (comma < 0) return undefined
  const header = url.slice(5, comma)
  if (!header.toLowerCase().endsWith(";base64")) return undefined
  const semicolon = header.indexOf(";")
  return { mimeType: baseMimeType(header.slice(0, semicolon)), data: url.slice(comma + 1) }
}

/** The first bytes of a base64 payload, enough to sniff its type without decoding megabytes. */
const headBytes = (base64: string): Uint8Array => Buffer.from(base64.slice(0, 400), "base64")

/** A base64 image (from a data URI or an `inlineData` part): type checked from its leading bytes. */
export const checkBase64Image = (
  mimeType: string | undefined,
  data: string,
  where: string,
  accepted: ReadonlyArray<string> = ACCEPTED_IMAGE_TYPES
): Effect.Effect<InlineImage, PluginFailure> => {
  if (data.length === 0)
    return Effect.fail(pluginFailure("invalid_request", `${where}: the image is empty`, { param: where }))
  return Effect.map(checkedType(headBytes(data), mimeType, where, accepted), (type) => ({ mimeType: type, data }))
}

export const isHttpUrl = (url: string): boolean => /^https?:\/\//i.test(url)

/** An image given as a data URI or a public link, ready to inline. */
export const resolveImageUrl = (
  url: string,
  where: string,
  fetcher: ImageFetcher,
  signal: AbortSignal,
  accepted: ReadonlyArray<string> = ACCEPTED_IMAGE_TYPES
): Effect.Effect<InlineImage, PluginFailure> => {
  const dataUri = parseDataUri(url)
  if (dataUri !== undefined) return checkBase64Image(dataUri.mimeType, dataUri.data, where, accepted)
  if (url.startsWith("data:")) {
    return Effect.fail(
      pluginFailure("invalid_request", `${where}: a data URI must be base64 (data:<type>;base64,<data>)`, {
        param: where
      })
    )
  }
  if (!isHttpUrl(url))
    return Effect.fail(
      pluginFailure("invalid_request", `${where}: expected an http(s) link or a data URI`, { param: where })
    )
  return Effect.flatMap(fetcher(url, signal), (fetched) =>
    Effect.map(checkedType(fetched.bytes, fetched.contentType, where, accepted), (mimeType) => ({
      mimeType,
      data: Buffer.from(fetched.bytes).toString("base64")
    }))
  )
}
