/**
 * API keys: `sk-` followed by the base62 encoding of 32 random bytes. Only the SHA-256 hash of the whole key is
 * stored; the key itself is shown once, at creation.
 */
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

export const KEY_PREFIX = "sk-"
export const KEY_RANDOM_BYTES = 32

export const base62 = (bytes: Uint8Array): string => {
  let value = 0n
  for (const byte of bytes) value = (value << 8n) | BigInt(byte)
  let text = ""
  while (value > 0n) {
    text = BASE62[Number(value % 62n)] + text
    value /= 62n
  }
  // 32 bytes always fit in 43 base62 digits; pad so every key has the same length.
  return text.padStart(43, "0")
}

export const formatKey = (randomBytes: Uint8Array): string => KEY_PREFIX + base62(randomBytes)

/** The shape of a key, checked before any lookup so malformed input never reaches the store. */
export const isWellFormedKey = (text: string): boolean => /^sk-[0-9A-Za-z]{43}$/.test(text)

/** What listings show of a key: enough to recognise it, never enough to use it. */
export const displayPrefix = (key: string): string => `${key.slice(0, 7)}…`

import type { RateLimits } from "./RateLimits.ts"

export interface KeyCreated {
  readonly type: "KeyCreated"
  readonly data: {
    readonly keyId: string
    readonly accountId: string
    readonly name: string
    readonly prefix: string
    /** Hex SHA-256 of the key: a digest, not the secret. */
    readonly keyHash: string
    readonly models: ReadonlyArray<string> | null
    readonly expiresAt: string | null
    readonly spendLimit: string | null
    /** Absent on keys created before rate limits existed: the operator's defaults apply. */
    readonly rateLimits?: RateLimits
    readonly at: string
  }
}

export interface KeyRevoked {
  readonly type: "KeyRevoked"
  readonly data: { readonly keyId: string; readonly accountId: string; readonly at: string }
}

export type KeyEvent = KeyCreated | KeyRevoked
