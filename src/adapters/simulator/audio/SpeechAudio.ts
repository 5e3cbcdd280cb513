/**
 * The sound of simulated speech: one short tone per character (its pitch from the character and the voice), silence
 * for whitespace and punctuation, 60 ms per character at speed 1 and at least half a second, as raw 24 kHz signed
 * 16-bit little-endian mono PCM (what OpenAI's `pcm` format is). Produced lazily so long inputs stream.
 */
import { createHash } from "node:crypto"
import { Transform } from "node:stream"

export const SAMPLE_RATE = 24_000
const MILLIS_PER_CHAR = 60
const MIN_SECONDS = 0.5
const AMPLITUDE = 0.3 * 32767
const FADE_SAMPLES = Math.round(SAMPLE_RATE * 0.005)
const CHUNK_SAMPLES = SAMPLE_RATE / 4

export interface SpeechPlan {
  readonly characters: ReadonlyArray<string>
  readonly samplesPerChar: number
  readonly totalSamples: number
  readonly baseHz: number
}

export const planSpeech = (input: string, voice: string, speed: number): SpeechPlan => {
  const characters = [...input]
  const samplesPerChar = Math.max(1, Math.round((SAMPLE_RATE * MILLIS_PER_CHAR) / 1000 / speed))
  const totalSamples = Math.max(characters.length * samplesPerChar, Math.round(SAMPLE_RATE * MIN_SECONDS))
  const baseHz = 160 + (createHash("sha256").update(voice).digest().readUInt8(0) % 80)
  return { characters, samplesPerChar, totalSamples, baseHz }
}

export const speechSeconds = (plan: SpeechPlan): number => plan.totalSamples / SAMPLE_RATE

const toneHz = (plan: SpeechPlan, character: string): number | undefined =>
  /[\p{L}\p{N}]/u.test(character) ? plan.baseHz + (character.codePointAt(0)! % 24) * 20 : undefined

/** PCM in chunks of about a quarter second. */
export function* speechPcm(plan: SpeechPlan): Generator<Buffer> {
  let chunk = Buffer.alloc(CHUNK_SAMPLES * 2)
  let filled = 0
  const push = (sample: number): Buffer | undefined => {
    chunk.writeInt16LE(sample, filled * 2)
    filled += 1
    if (filled < CHUNK_SAMPLES) return undefined
    const full = chunk
    chunk = Buffer.alloc(CHUNK_SAMPLES * 2)
    filled = 0
    return full
  }
  let written = 0
  for (const character of plan.characters) {
    const hz = toneHz(plan, character)
    for (let i = 0; i < plan.samplesPerChar; i++) {
      const fade = Math.min(1, i / FADE_SAMPLES, (plan.samplesPerChar - 1 - i) / FADE_SAMPLES)
      const sample =
        hz === undefined ? 0 : Math.round(AMPLITUDE * fade * Math.sin((2 * Math.PI * hz * i) / SAMPLE_RATE))
      const full = push(sample)
      if (full !== undefined) yield full
    }
    written += plan.samplesPerChar
  }
  for (; written < plan.totalSamples; written++) {
    const full = push(0)
    if (full !== undefined) yield full
  }
  if (filled > 0) yield chunk.subarray(0, filled * 2)
}

/** A RIFF/WAVE header for 16-bit mono PCM of `samples` samples. */
export const wavHeader = (samples: number, sampleRate = SAMPLE_RATE): Buffer => {
  const header = Buffer.alloc(44)
  const dataBytes = samples * 2
  header.write("RIFF", 0, "ascii")
  header.writeUInt32LE(36 + dataBytes, 4)
  header.write("WAVE", 8, "ascii")
  header.write("fmt ", 12, "ascii")
  header.writeUInt32LE(16, 16)
  header.writeUInt16LE(1, 20)
  header.writeUInt16LE(1, 22)
  header.writeUInt32LE(sampleRate, 24)
  header.writeUInt32LE(sampleRate * 2, 28)
  header.writeUInt16LE(2, 32)
  header.writeUInt16LE(16, 34)
  header.write("data", 36, "ascii")
  header.writeUInt32LE(dataBytes, 40)
  return header
}

/**
 * ffmpeg writing FLAC to a pipe cannot seek back to fill in STREAMINFO's total sample count, which leaves players
 * without a duration. The count is known before encoding, so it is patched into the header as it passes.
 */
export const flacTotalSamplesPatch = (totalSamples: number): Transform => {
  let head: Buffer | undefined = Buffer.alloc(0)
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (head === undefined) {
        done(null, chunk)
        return
      }
      head = Buffer.concat([head, chunk])
      if (head.length < 26) {
        done()
        return
      }
      const out = head
      head = undefined
      // "fLaC", then a metadata block header whose type 0 is STREAMINFO; the 36-bit count starts at bit 4 of byte 21.
      if (out.toString("ascii", 0, 4) === "fLaC" && (out[4]! & 0x7f) === 0) {
        out[21] = (out[21]! & 0xf0) | (Math.floor(totalSamples / 2 ** 32) & 0x0f)
        out.writeUInt32BE(totalSamples % 2 ** 32, 22)
      }
      done(null, out)
    },
    flush(done) {
      done(null, head !== undefined && head.length > 0 ? head : null)
    }
  })
}
