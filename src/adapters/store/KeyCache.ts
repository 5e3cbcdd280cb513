/**
 * Accepted API keys remembered for a short time, so that a busy key costs no store query per request. Entries are
 * found by the key's SHA-256 digest (compared again in constant time) and live `ttlMs` at most: that bounds how long a
 * revocation made through another instance sharing the database can lag here. A revocation through this instance
 * calls `forget`, so it holds from the next request on. Expiry is checked against the clock on every hit. Refused keys
 * are never remembered: an unknown, revoked or expired key goes to the store (and the failed-auth throttle) each time.
 */
import { timingSafeEqual } from "node:crypto"
import type { AuthenticatedKey } from "../../app/Keys.ts"

interface Entry {
  readonly digest: Buffer
  readonly key: AuthenticatedKey
  /** Epoch ms; null = never expires. */
  readonly expiresAt: number | null
  readonly cachedAt: number
}

export interface KeyCache {
  /** The remembered key, `"expired"` once its expiry has passed, or undefined (ask the store). */
  readonly get: (digest: Buffer, now: number) => AuthenticatedKey | "expired" | undefined
  /** Remembers a key the store accepted at `now`; returns it. */
  readonly remember: (digest: Buffer, key: AuthenticatedKey, expiresAt: number | null, now: number) => AuthenticatedKey
  readonly forget: (keyId: string) => void
}

export const DEFAULT_KEY_CACHE_TTL_MS = 1_000
const DEFAULT_KEY_CACHE_MAX = 10_000

export const makeKeyCache = (ttlMs = DEFAULT_KEY_CACHE_TTL_MS, maxEntries = DEFAULT_KEY_CACHE_MAX): KeyCache => {
  // By hex digest. Map order is insertion order, so the first entry is the oldest.
  const entries = new Map<string, Entry>()

  const get = (digest: Buffer, now: number) => {
    const id = digest.toString("hex")
    const entry = entries.get(id)
    if (entry === undefined) return undefined
    if (now - entry.cachedAt >= ttlMs || now < entry.cachedAt || !timingSafeEqual(entry.digest, digest)) {
      entries.delete(id)
      return undefined
    }
    return entry.expiresAt !== null && entry.expiresAt <= now ? "expired" : entry.key
  }

  const remember = (digest: Buffer, key: AuthenticatedKey, expiresAt: number | null, now: number) => {
    const id = digest.toString("hex")
    entries.delete(id)
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string)
    entries.set(id, { digest, key, expiresAt, cachedAt: now })
    return key
  }

  const forget = (keyId: string) => {
    for (const [id, entry] of entries) if (entry.key.keyId === keyId) entries.delete(id)
  }

  return { get, remember, forget }
}
