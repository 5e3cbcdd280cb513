/**
 * Deterministic embedding vectors: a xoshiro128** stream seeded from SHA-256 of the input, L2-normalized. The same
 * input and dimension always give the same unit vector, and a shorter vector is the normalized prefix of a longer
 * one (like Matryoshka embeddings), so OpenAI's `dimensions` and Gemini's `outputDimensionality` agree for one text.
 */
import { createHash } from "node:crypto"

/** What a vector is derived from: a text, or (OpenAI only) a list of token ids. */
export type EmbeddingInput =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Tokens"; readonly ids: ReadonlyArray<number> }

const seedOf = (input: EmbeddingInput): Uint32Array => {
  const key = input._tag === "Text" ? `text\u0000${input.text}` : `tokens\u0000${input.ids.join(",")}`
  const digest = createHash("sha256").update(key, "utf8").digest()
  const seed = new Uint32Array(4)
  for (let i = 0; i < 4; i++) seed[i] = digest.readUInt32LE(i * 4) ^ digest.readUInt32LE(16 + i * 4)
  // xoshiro must not start from all zeros.
  if (seed.every((word) => word === 0)) seed[0] = 1
  return seed
}

const rotl = (x: number, k: number): number => ((x << k) | (x >>> (32 - k))) >>> 0

/** A unit vector of `dimensions` components (each rounded through float32, as the vendors send them). */
export const embeddingVector = (input: EmbeddingInput, dimensions: number): ReadonlyArray<number> => {
  const s = seedOf(input)
  const raw = new Float64Array(dimensions)
  for (let i = 0; i < dimensions; i++) {
    const result = Math.imul(rotl(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0
    const t = (s[1]! << 9) >>> 0
    s[2] = (s[2]! ^ s[0]!) >>> 0
    s[3] = (s[3]! ^ s[1]!) >>> 0
    s[1] = (s[1]! ^ s[2]!) >>> 0
    s[0] = (s[0]! ^ s[3]!) >>> 0
    s[2] = (s[2]! ^ t) >>> 0
    s[3] = rotl(s[3]!, 11)
    raw[i] = result / 0x1_0000_0000 - 0.5
  }
  let norm = 0
  for (const value of raw) norm += value * value
  norm = Math.sqrt(norm)
  // Float32 rounding keeps the float and base64 encodings of a vector identical.
  return Array.from(raw, (value) => Math.fround(norm === 0 ? 1 / Math.sqrt(dimensions) : value / norm))
}

/** OpenAI's `encoding_format: "base64"`: little-endian float32 bytes, base64-encoded. */
export const toBase64Floats = (vector: ReadonlyArray<number>): string => {
  const bytes = Buffer.alloc(vector.length * 4)
  for (const [index, value] of vector.entries()) bytes.writeFloatLE(value, index * 4)
  return bytes.toString("base64")
}

export const fromBase64Floats = (text: string): ReadonlyArray<number> => {
  const bytes = Buffer.from(text, "base64")
  return Array.from({ length: Math.floor(bytes.length / 4) }, (_, index) => bytes.readFloatLE(index * 4))
}
