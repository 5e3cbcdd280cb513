/**
 * The deterministic transcript of an upload: a sentence naming the duration, then words picked from the file's
 * SHA-256, spread evenly over the duration, grouped into segments of up to 12 words, and rendered as SRT or WebVTT.
 */
import { createHash } from "node:crypto"
import { encodeText } from "../../tokenizer/Tokenizer.ts"

const WORDS = [
  "the",
  "signal",
  "river",
  "quiet",
  "morning",
  "ledger",
  "bright",
  "window",
  "simple",
  "orange",
  "station",
  "forty",
  "garden",
  "metal",
  "careful",
  "answer",
  "paper",
  "silver",
  "north",
  "open",
  "market",
  "seven",
  "winter",
  "calm",
  "harbor",
  "table",
  "little",
  "green",
  "engine",
  "voice",
  "bridge",
  "number"
]
const WORDS_PER_SEGMENT = 12

export interface TimedWord {
  readonly word: string
  readonly start: number
  readonly end: number
}

export interface Segment {
  readonly id: number
  readonly start: number
  readonly end: number
  readonly text: string
  readonly words: ReadonlyArray<TimedWord>
}

export interface Transcript {
  readonly text: string
  readonly seconds: number
  readonly words: ReadonlyArray<TimedWord>
  readonly segments: ReadonlyArray<Segment>
}

const round = (seconds: number): number => Math.round(seconds * 1000) / 1000

export const transcribe = (bytes: Uint8Array, seconds: number): Transcript => {
  const digest = createHash("sha256").update(bytes).digest()
  const extra = Math.max(2, Math.round(seconds * 2))
  const picked = Array.from({ length: extra }, (_, i) => WORDS[digest[i % digest.length]! % WORDS.length]!)
  const text = `Simulated transcript of ${seconds.toFixed(1)} seconds of audio: ${picked.join(" ")}.`
  const tokens = text.split(" ")
  const step = seconds / tokens.length
  const words = tokens.map((word, i) => ({
    word: word.replace(/[.:]$/, ""),
    start: round(i * step),
    end: round(i === tokens.length - 1 ? seconds : (i + 1) * step)
  }))
  const segments: Array<Segment> = []
  for (let i = 0; i < tokens.length; i += WORDS_PER_SEGMENT) {
    const group = words.slice(i, i + WORDS_PER_SEGMENT)
    segments.push({
      id: segments.length,
      start: group[0]!.start,
      end: group.at(-1)!.end,
      text: ` ${tokens.slice(i, i + WORDS_PER_SEGMENT).join(" ")}`,
      words: group
    })
  }
  return { text, seconds, words, segments }
}

export const segmentTokens = (segment: Segment): ReadonlyArray<number> => encodeText(segment.text)

const stamp = (seconds: number, separator: "," | "."): string => {
  const millis = Math.round(seconds * 1000)
  const h = Math.floor(millis / 3_600_000)
  const m = Math.floor(millis / 60_000) % 60
  const s = Math.floor(millis / 1000) % 60
  const ms = millis % 1000
  const two = (n: number) => String(n).padStart(2, "0")
  return `${two(h)}:${two(m)}:${two(s)}${separator}${String(ms).padStart(3, "0")}`
}

export const toSrt = (transcript: Transcript): string =>
  transcript.segments
    .map(
      (segment) =>
        `${segment.id + 1}\n${stamp(segment.start, ",")} --> ${stamp(segment.end, ",")}\n${segment.text.trim()}\n`
    )
    .join("\n")

export const toVtt = (transcript: Transcript): string =>
  `WEBVTT\n\n${transcript.segments
    .map((segment) => `${stamp(segment.start, ".")} --> ${stamp(segment.end, ".")}\n${segment.text.trim()}\n`)
    .join("\n")}`
