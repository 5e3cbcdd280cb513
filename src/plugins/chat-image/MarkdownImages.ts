/**
 * The Markdown images an earlier reply inlined (`![alt](data:image/png;base64,…)`), found with a single forward scan:
 * each candidate is checked with bounded look-ahead and the base64 run is walked once, so the work is linear in the
 * text even on multi-MB replies and hostile input (no backtracking regex).
 */

export type MarkdownSegment =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Image"; readonly mimeType: string; readonly data: string }

/** Longest alt text and data-URI header (`data:image/png;base64,`) looked at before a candidate is given up. */
const MAX_ALT = 256
const MAX_HEADER = 128

const isBase64Char = (code: number): boolean =>
  (code >= 65 && code <= 90) || // A-Z
  (code >= 97 && code <= 122) || // a-z
  (code >= 48 && code <= 57) || // 0-9
  code === 43 || // +
  code === 47 || // /
  code === 61 || // =
  code === 45 || // - (base64url)
  code === 95 // _

/** The index of the `)` that closes an image starting at `open` (the `![`), and its parts; undefined if none. */
const imageAt = (
  text: string,
  open: number
): { readonly end: number; readonly mimeType: string; readonly data: string } | { readonly skipTo: number } => {
  let i = open + 2
  const altLimit = Math.min(text.length, i + MAX_ALT)
  // Alt text has no brackets or line breaks; stopping at `[` keeps runs of `![![![` from costing MAX_ALT each.
  for (; i < altLimit; i++) {
    const code = text.charCodeAt(i)
    if (code === 93 /* ] */ || code === 91 /* [ */ || code === 10) break
  }
  if (text.charCodeAt(i) !== 93 || text.charCodeAt(i + 1) !== 40 /* ( */) return { skipTo: Math.max(open + 2, i - 1) }
  const target = i + 2
  if (!text.startsWith("data:", target)) return { skipTo: target }
  const headerLimit = Math.min(text.length, target + MAX_HEADER)
  let comma = target
  while (comma < headerLimit && text.charCodeAt(comma) !== 44 /* , */) comma++
  if (comma >= headerLimit) return { skipTo: target }
  const header = text.slice(target + 5, comma)
  const semicolon = header.indexOf(";")
  if (semicolon < 0 || header.slice(semicolon).toLowerCase() !== ";base64") return { skipTo: target }
  const mimeType = header.slice(0, semicolon).toLowerCase()
  if (!mimeType.startsWith("image/")) return { skipTo: target }
  let end = comma + 1
  while (end < text.length && isBase64Char(text.charCodeAt(end))) end++
  // Nothing between the comma and here can start another image, so a miss resumes after the run.
  if (text.charCodeAt(end) !== 41 /* ) */ || end === comma + 1) return { skipTo: end }
  return { end, mimeType, data: text.slice(comma + 1, end) }
}

/** Splits text into its prose and its inlined data-URI images, in order. Links that are not data URIs stay text. */
export const splitMarkdownImages = (text: string): ReadonlyArray<MarkdownSegment> => {
  const segments: Array<MarkdownSegment> = []
  let from = 0
  let cursor = 0
  for (;;) {
    const open = text.indexOf("![", cursor)
    if (open < 0) break
    const found = imageAt(text, open)
    if ("skipTo" in found) {
      cursor = found.skipTo
      continue
    }
    if (open > from) segments.push({ _tag: "Text", text: text.slice(from, open) })
    segments.push({ _tag: "Image", mimeType: found.mimeType, data: found.data })
    from = found.end + 1
    cursor = from
  }
  if (from < text.length) segments.push({ _tag: "Text", text: text.slice(from) })
  return segments
}

/** How a reply inlines one image. */
export const markdownImage = (mimeType: string, data: string): string => `![image](data:${mimeType};base64,${data})`
