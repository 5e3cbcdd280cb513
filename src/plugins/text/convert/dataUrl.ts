/**
 * `data:<mime>[;params];base64,<payload>` ↔ base64 image sources. Linear scan, no regex, since payloads are often MBs.
 */
import type { ImageSource } from "./ChatIR.ts"

export const imageSourceFromUrl = (url: string): ImageSource => {
  if (!url.startsWith("data:")) return { kind: "url", url }
  const comma = url.indexOf(",")
  if (comma < 0) return { kind: "url", url }
  const header = url.slice(5, comma)
  if (!header.endsWith(";base64")) return { kind: "url", url }
  const semicolon = header.indexOf(";")
  return { kind: "base64", mediaType: header.slice(0, semicolon), data: url.slice(comma + 1) }
}

export const imageSourceToUrl = (source: ImageSource): string =>
  source.kind === "url" ? source.url : `data:${source.mediaType};base64,${source.data}`
