/**
 * Token counting with the o200k_base BPE (GPT-4o / GPT-5 family). It is exact for OpenAI text and a close, stable
 * estimate for other vendors, which is what holds and the simulator need: the same input always gives the same count.
 */
import { Effect } from "effect"
import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants"
import { createRequire } from "node:module"

type O200k = typeof import("gpt-tokenizer/encoding/o200k_base")
let o200k: O200k | undefined

/**
 * The o200k tables are loaded by the first count, not at start-up: they are ~45 MB of the process and ~0.3 s of its
 * start (bench/README.md, "Start-up and memory"), which an idle gateway, the CLI and a gateway serving only other
 * kinds never use. Loaded synchronously (the package's CommonJS build) because counting is synchronous.
 */
const tables = (): O200k => {
  if (o200k === undefined) {
    const loaded = createRequire(import.meta.url)("gpt-tokenizer/cjs/encoding/o200k_base") as O200k
    // The library keeps the BPE merges of up to 100,000 pre-tokens in a Map it uses as an LRU. Once full, every miss
    // evicts the Map's first entry, and V8 skips the deleted entries before it on each eviction: measured, counting
    // 10 MB of words took 6.7 s after a 2 MB random text had filled the cache, against 0.26 s before. At 1,000 entries
    // the same text takes 0.46 s after and common words still hit.
    loaded.setMergeCacheSize(1000)
    o200k = loaded
  }
  return o200k
}
const countTokens: O200k["countTokens"] = (text, options) => tables().countTokens(text, options)
const encodeO200k: O200k["encode"] = (text, options) => tables().encode(text, options)
const decodeO200k: O200k["decode"] = (tokens) => tables().decode(tokens)

/** Tokens added per chat message for role and framing (OpenAI's published `tokens_per_message` for gpt-4o). */
export const MESSAGE_OVERHEAD_TOKENS = 3
/** Tokens that prime the assistant reply, added once per request. */
export const REPLY_PRIMING_TOKENS = 3
/** Fixed estimate per image part: OpenAI's cost of a 1024×1024 image at `detail: high` (85 + 4 × 170). */
export const IMAGE_TOKENS = 765
/** Fixed estimate per audio or file part whose length cannot be known without decoding it. */
export const ATTACHMENT_TOKENS = 1000

// Vendors treat `<|endoftext|>` in user text as plain text; the library would throw on it by default.
const plainText = { disallowedSpecial: new Set<string>() }

// BPE merges cost superlinear time in the length of one pre-token (a 50,000-character run without a space takes
// seconds), and the library's `encode` spreads a pre-token's tokens into one call's arguments (a RangeError past
// ~100,000). Long texts are therefore tokenized in chunks of about CHUNK characters, cut on a boundary of o200k's own
// pre-tokenizer after a character that is not whitespace: its regex has no look-behind and looks ahead only for
// whitespace, so each chunk splits into the same pre-tokens as the whole text and ordinary text counts exactly as in
// one piece. A pre-token longer than MAX_PIECE (a run of letters, spaces or symbols) is cut every MAX_PIECE
// characters: at most one extra token per cut, an over-estimate a hold can carry.
const MAX_PIECE = 64
const CHUNK = 4096
/** Characters a request may hold and still be counted at once: ~0.5 ms of ordinary text, ~40 ms of the costliest. */
export const SLICE_CHARS = 16_384
/**
 * Characters tokenized between two yields once a text is counted in slices: ~10 ms of the costliest text (random
 * letters or CJK, 1–2.5 µs a character), so a huge prompt never holds the event loop long, even on a busy machine.
 */
const YIELD_CHARS = 4_096
const PRE_TOKEN = new RegExp(O200K_TOKEN_SPLIT_REGEX.source, "gu")
// A pre-token longer than MAX_PIECE holds MAX_PIECE characters in a row without a space (letters, symbols, at most
// one leading space) or is whitespace only; text without either is tokenized in one piece, as the library would.
const LONG_PIECE = new RegExp(`[^ ]{${MAX_PIECE}}|\\s{${MAX_PIECE + 1}}`)

/**
 * Whether a chunk may end after a pre-token ending in this character. The one look-ahead of the pre-tokenizer,
 * `\s+(?!\S)`, only matches whitespace ending in a space or the like; a pre-token ending in anything else (a line
 * break included: whitespace with one is matched earlier, by `\s*[\r\n]+`) splits the same in a chunk.
 */
const isCutAfter = (code: number): boolean =>
  code === 10 ||
  code === 13 ||
  !(code === 32 || code === 9 || code === 11 || code === 12 || (code > 127 && /\s/.test(String.fromCharCode(code))))

/** Whether `text` is tokenized in one piece (no chunking needed). */
const isSmall = (text: string): boolean => text.length <= MAX_PIECE || (text.length <= CHUNK && !LONG_PIECE.test(text))

/**
 * Hands `text` from `from` on to `visit` in exact pieces (see above), each at most CHUNK characters, and stops after
 * about `budget` characters or once `visit` returns false. Returns where it stopped (`text.length` once done); a
 * later call from there goes on as if there had been no stop. The pre-tokenizer only sees a window of `budget` plus
 * two chunks, so a slice never scans the rest of a long run (which would make slicing quadratic).
 */
const forEachPiece = (text: string, from: number, budget: number, visit: (piece: string) => boolean): number => {
  const windowEnd = Math.min(text.length, from + budget + 2 * CHUNK)
  const window = windowEnd === text.length ? text : text.slice(0, windowEnd)
  let start = from
  let end = from
  PRE_TOKEN.lastIndex = from
  for (;;) {
    const match = PRE_TOKEN.exec(window)
    if (match === null) {
      // The end of the text (every character belongs to some pre-token, so only there).
      if (windowEnd > start) visit(text.slice(start, windowEnd))
      return windowEnd
    }
    const at = match.index
    const matchEnd = at + match[0].length
    // A pre-token that reaches the window's end may go on past it: it is read again from the next window.
    const cutShort = matchEnd === windowEnd && windowEnd < text.length
    if (matchEnd - at > MAX_PIECE) {
      if (at > start && !visit(text.slice(start, at))) return at
      let cut = at
      while (cut < matchEnd) {
        let next = Math.min(cut + MAX_PIECE, matchEnd)
        if (next === matchEnd && cutShort) return cut
        // Never between the two halves of a surrogate pair.
        if (next < matchEnd && (text.charCodeAt(next - 1) & 0xfc00) === 0xd800) next -= 1
        if (!visit(text.slice(cut, next))) return next
        cut = next
        if (cut - from >= budget) return cut
      }
      start = end = matchEnd
      if (start - from >= budget) return start
      PRE_TOKEN.lastIndex = matchEnd
      continue
    }
    if (cutShort) {
      // A window is two chunks longer than the budget, so a chunk was cut before; this fallback only ensures progress.
      if (start > from || end === start) return start
      visit(text.slice(start, end))
      return end
    }
    if (matchEnd - start > CHUNK && end > start && isCutAfter(text.charCodeAt(end - 1))) {
      if (!visit(text.slice(start, end))) return end
      start = end
      if (start - from >= budget) return start
    }
    end = matchEnd
  }
}

/** Tokens of `text` from `from` on, about `budget` characters of it, and where the count stopped. */
const countSome = (text: string, from: number, budget: number): { readonly tokens: number; readonly next: number } => {
  let tokens = 0
  const next = forEachPiece(text, from, budget, (piece) => {
    tokens += countTokens(piece, plainText)
    return true
  })
  return { tokens, next }
}

/** Tokens of a plain string (counted without building the token array), synchronously whatever its length. */
export const countText = (text: string): number => {
  if (text.length === 0) return 0
  if (isSmall(text)) return countTokens(text, plainText)
  let total = 0
  for (let at = 0; at < text.length; ) {
    const some = countSome(text, at, SLICE_CHARS)
    total += some.tokens
    at = some.next
  }
  return total
}

/**
 * Tokens of a plain string, `countText`'s count, tokenized YIELD_CHARS characters at a time with a yield to the event
 * loop between slices (the scheduler resumes the fiber from `setImmediate`, after pending I/O such as a health check).
 */
export const countTextSliced = (text: string): Effect.Effect<number> =>
  isSmall(text)
    ? Effect.sync(() => countText(text))
    : Effect.gen(function* () {
        let total = 0
        for (let at = 0; at < text.length; ) {
          if (at > 0) yield* Effect.yieldNow
          const some = countSome(text, at, YIELD_CHARS)
          total += some.tokens
          at = some.next
        }
        return total
      })

/** The longest prefix of `text` that fits in `maxTokens` tokens (cut on a token boundary). */
export const truncateToTokens = (text: string, maxTokens: number): string => {
  if (maxTokens <= 0) return ""
  if (isSmall(text)) {
    const tokens = encodeO200k(text, plainText)
    return tokens.length <= maxTokens ? text : decodeO200k(tokens.slice(0, maxTokens))
  }
  // Only the prefix that holds the first `maxTokens` tokens is encoded.
  let kept: Array<number> = []
  let fits = true
  forEachPiece(text, 0, Number.POSITIVE_INFINITY, (piece) => {
    const tokens = encodeO200k(piece, plainText)
    if (kept.length + tokens.length > maxTokens) {
      kept = kept.concat(tokens.slice(0, maxTokens - kept.length))
      fits = false
      return false
    }
    kept = kept.concat(tokens)
    return true
  })
  return fits ? text : decodeO200k(kept)
}

/** `text` split into pieces of about `tokensPerPiece` tokens; joining them gives `text`. */
const splitPiece = (text: string, size: number, pieces: Array<string>): void => {
  const tokens = encodeO200k(text, plainText)
  let start = 0
  let consumed = 0
  while (start < tokens.length) {
    let end = Math.min(start + size, tokens.length)
    let piece = decodeO200k(tokens.slice(start, end))
    // A multi-byte character can span tokens: grow the piece until it decodes to exactly the next slice of the text.
    while (end < tokens.length && (piece.endsWith("\uFFFD") || !text.startsWith(piece, consumed))) {
      end += 1
      piece = decodeO200k(tokens.slice(start, end))
    }
    const exact = end === tokens.length ? text.slice(consumed) : piece
    pieces.push(exact)
    consumed += exact.length
    start = end
  }
}

/** The text split into pieces of about `tokensPerPiece` tokens, for streaming deltas; joining them gives `text`. */
export const splitByTokens = (text: string, tokensPerPiece: number): ReadonlyArray<string> => {
  const size = Math.max(1, Math.floor(tokensPerPiece))
  const pieces: Array<string> = []
  if (isSmall(text)) splitPiece(text, size, pieces)
  else {
    forEachPiece(text, 0, Number.POSITIVE_INFINITY, (piece) => {
      splitPiece(piece, size, pieces)
      return true
    })
  }
  return pieces
}

/** The o200k token ids of `text` (the simulator's transcripts). */
export const encodeText = (text: string): Array<number> => encodeO200k(text, plainText)
