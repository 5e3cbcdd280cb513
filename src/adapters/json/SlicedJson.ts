/**
 * JSON in and out for bodies that may carry a huge prompt (the body limit is 32 MiB). One `JSON.parse` or
 * `JSON.stringify` of 30 MB holds the event loop for tens to hundreds of milliseconds, and every other request of the
 * process with it. Ordinary values (no string of a megabyte or more) take the built-ins at once, as cheap as before;
 * a value with huge strings is handled a slice at a time, the event loop let in between: its structure goes through
 * the built-in with each huge string replaced by a marker, and the huge strings are escaped or unescaped in slices.
 */
import { Effect } from "effect"
import { randomUUID } from "node:crypto"

/** Where slicing starts and how big a slice is, in UTF-16 units (tests use small ones to reach every boundary). */
export interface Slicing {
  /** A string at least this long is escaped or unescaped in slices. */
  readonly largeString: number
  readonly slice: number
  /** Text shorter than this is parsed at once. */
  readonly largeText: number
}

export const defaultSlicing: Slicing = { largeString: 1 << 20, slice: 1 << 20, largeText: 4 << 20 }

const encoder = new TextEncoder()

/**
 * Whether `value` holds a string of at least `largeString` characters. Recursive without allocating (it runs on every
 * upstream request); past `MAX_DEPTH` levels it answers yes, which only sends the value down the sliced path.
 */
const holdsLargeString = (value: unknown, largeString: number, depth = 0): boolean => {
  if (typeof value === "string") return value.length >= largeString
  if (typeof value !== "object" || value === null) return false
  if (depth > MAX_DEPTH) return true
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (holdsLargeString(value[i], largeString, depth + 1)) return true
    return false
  }
  for (const key in value) {
    if (holdsLargeString((value as Record<string, unknown>)[key], largeString, depth + 1)) return true
  }
  return false
}

const MAX_DEPTH = 256

/**
 * A copy of `value` with each large string replaced by a marker, and the strings in marker order. `toJSON` is not
 * honoured on the way (request bodies are plain data).
 */
const withMarkers = (
  value: unknown,
  largeString: number,
  marker: (index: number) => string,
  large: Array<string>
): unknown => {
  if (typeof value === "string") {
    if (value.length < largeString) return value
    large.push(value)
    return marker(large.length - 1)
  }
  if (Array.isArray(value)) return value.map((item) => withMarkers(item, largeString, marker, large))
  if (typeof value === "object" && value !== null) {
    // No prototype: a `__proto__` key from a parsed body stays an ordinary key.
    const copy: Record<string, unknown> = Object.create(null)
    for (const key of Object.keys(value)) {
      copy[key] = withMarkers((value as Record<string, unknown>)[key], largeString, marker, large)
    }
    return copy
  }
  return value
}

/** `text` escaped for a JSON string, without the quotes, one slice at a time, each slice's bytes pushed to `out`. */
const escapeInSlices = (text: string, slice: number, out: Array<Uint8Array>) =>
  Effect.gen(function* () {
    for (let at = 0; at < text.length; at += slice) {
      // A slice can end between the halves of a surrogate pair: JSON.stringify then escapes each half, and the
      // escapes read back as the same pair.
      const escaped = JSON.stringify(text.slice(at, at + slice))
      out.push(encoder.encode(escaped.slice(1, -1)))
      yield* Effect.yieldNow
    }
  })

/** The body to send: a string for an ordinary value, its UTF-8 bytes built in slices for one with huge strings. */
export const jsonBody = (value: unknown, slicing: Slicing = defaultSlicing): Effect.Effect<string | Uint8Array> => {
  if (!holdsLargeString(value, slicing.largeString)) return Effect.sync(() => JSON.stringify(value))
  return Effect.gen(function* () {
    const nonce = randomUUID()
    const large: Array<string> = []
    const skeleton = JSON.stringify(
      withMarkers(value, slicing.largeString, (index) => `\u0000${nonce}:${index}`, large)
    )
    const out: Array<Uint8Array> = []
    let from = 0
    for (let index = 0; index < large.length; index++) {
      // The marker as JSON.stringify wrote it: quoted, its NUL escaped (a NUL never stands raw in JSON text).
      const quoted = JSON.stringify(`\u0000${nonce}:${index}`)
      const at = skeleton.indexOf(quoted, from)
      out.push(encoder.encode(`${skeleton.slice(from, at)}"`))
      yield* escapeInSlices(large[index] as string, slicing.slice, out)
      out.push(encoder.encode('"'))
      from = at + quoted.length
    }
    out.push(encoder.encode(skeleton.slice(from)))
    const bytes = new Uint8Array(out.reduce((size, part) => size + part.length, 0))
    let offset = 0
    for (const part of out) {
      bytes.set(part, offset)
      offset += part.length
    }
    return bytes
  })
}

// ---------------------------------------------------------------------------------------------------------------------
// Parsing

const BACKSLASH = 92
const U = 117

/** The index of the quote that closes the string opened at `open`, or -1 (a quote preceded by an odd run of backslashes). */
const closingQuote = (text: string, open: number): number => {
  let at = text.indexOf('"', open + 1)
  while (at !== -1) {
    let backslashes = 0
    while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return at
    at = text.indexOf('"', at + 1)
  }
  return -1
}

/**
 * Where a slice of the string literal body starting at `from` may end, at `cut` or just before it, without splitting
 * an escape: a backslash within the six characters before the cut (`\uXXXX` is the longest escape) that opens an
 * escape (it ends an odd run of backslashes; an even run is all `\\` pairs) moves the cut before it — or after it,
 * when the slice would otherwise be empty (slices shorter than an escape, in tests).
 */
const safeCut = (text: string, from: number, cut: number): number => {
  const last = text.lastIndexOf("\\", cut - 1)
  if (last < from || last < cut - 6) return cut
  let run = 0
  while (last - run >= from && text.charCodeAt(last - run) === BACKSLASH) run++
  if (run % 2 === 0) return cut
  // The slice would be empty (it starts with this escape): it takes the whole escape instead.
  return last > from ? last : last + (text.charCodeAt(last + 1) === U ? 6 : 2)
}

/** The value of the string literal whose body is `text[from, to)`, unescaped a slice at a time. */
const unescapeInSlices = (text: string, from: number, to: number, slice: number) =>
  Effect.gen(function* () {
    const pieces: Array<string> = []
    for (let at = from; at < to; ) {
      const end = at + slice >= to ? to : safeCut(text, at, at + slice)
      const literal = `"${text.slice(at, end)}"`
      pieces.push(
        yield* Effect.try({ try: () => JSON.parse(literal) as string, catch: (error) => error as SyntaxError })
      )
      at = end
      yield* Effect.yieldNow
    }
    return pieces.join("")
  })

/** `value` with every marker string (as a value or a key) replaced by its large string. */
const restore = (value: unknown, markers: ReadonlyMap<string, string>): unknown => {
  if (typeof value === "string") return markers.get(value) ?? value
  if (Array.isArray(value)) return value.map((item) => restore(item, markers))
  if (typeof value === "object" && value !== null) {
    const copy: Record<string, unknown> = Object.create(null)
    for (const key of Object.keys(value)) {
      copy[markers.get(key) ?? key] = restore((value as Record<string, unknown>)[key], markers)
    }
    return Object.setPrototypeOf(copy, Object.prototype)
  }
  return value
}

/**
 * `JSON.parse(text)`, a slice at a time when `text` is large: its string literals of a megabyte or more are unescaped
 * in slices and the rest parsed at once. Fails as `JSON.parse` would (the same error, from `JSON.parse` itself, which
 * runs once more on text that turns out invalid).
 */
export const parseInSlices = (text: string, slicing: Slicing = defaultSlicing): Effect.Effect<unknown, SyntaxError> => {
  const parseOnce = Effect.try({ try: (): unknown => JSON.parse(text), catch: (error) => error as SyntaxError })
  if (text.length < slicing.largeText) return parseOnce
  return Effect.gen(function* () {
    const nonce = randomUUID()
    const markers = new Map<string, string>()
    const skeleton: Array<string> = []
    let copied = 0
    let scanned = 0
    for (let open = text.indexOf('"'); open !== -1; open = text.indexOf('"', open)) {
      const close = closingQuote(text, open)
      if (close === -1) return yield* parseOnce
      if (close - open - 1 >= slicing.largeString) {
        const marker = `\u0000${nonce}:${markers.size}`
        const value = yield* Effect.result(unescapeInSlices(text, open + 1, close, slicing.slice))
        // Not a valid string literal: the text is not valid JSON, and JSON.parse says why.
        if (value._tag === "Failure") return yield* parseOnce
        markers.set(marker, value.success)
        skeleton.push(text.slice(copied, open), JSON.stringify(marker))
        copied = close + 1
      }
      open = close + 1
      // Scanning is native (indexOf) but not free: let the event loop in every few megabytes of it.
      if (open - scanned > slicing.largeText) {
        scanned = open
        yield* Effect.yieldNow
      }
    }
    skeleton.push(text.slice(copied))
    const parsed = yield* Effect.try({
      try: (): unknown => JSON.parse(skeleton.join("")),
      catch: (error) => error as SyntaxError
    }).pipe(Effect.catch(() => parseOnce))
    return markers.size === 0 ? parsed : restore(parsed, markers)
  })
}
