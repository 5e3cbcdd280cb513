/**
 * Accepted API keys remembered, so that a busy key costs no store query per request. Entries are found by the key's
 * SHA-256 digest (compared again in constant time) and live `ttlMs()` at most — long while this instance hears every
 * revocation as it commits (StoreNotifications), short otherwise: that bounds how long a revocation made through
 * another instance can lag here. A revocation, heard or made here, calls `forget`, so it holds from the next request
 * on; a lookup that began before any `forget` is not remembered (`generation`), so a read racing a revocation cannot
 * leave the key behind. Expiry is checked against the clock on every hit. Refused keys are never remembered: an
 * unknown, revoked or expired key goes to the store (and the failed-auth throttle) each time.
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
  /** Read before asking the store; `remember` keeps the answer only if nothing was forgotten since. */
  readonly generation: () => number
  /** Remembers a key the store accepted at `now` (read after `since`); returns it. */
  readonly remember: (
    digest: Buffer,
    key: AuthenticatedKey,
    expiresAt: number | null,
    now: number,
    since: number
  ) => AuthenticatedKey
  readonly forget: (keyId: string) => void
  readonly forgetAll: () => void
}

/** Without notifications of revocations: another instance's revocation holds here within a second. */
export const DEFAULT_KEY_CACHE_TTL_MS = 1_000
/** While every revocation is heard as it commits: a backstop for a listening connection that died silently. */
export const HEARD_KEY_CACHE_TTL_MS = 30_000
const DEFAULT_KEY_CACHE_MAX = 10_000

export const makeKeyCache = (
  ttlMs: () => number = () => DEFAULT_KEY_CACHE_TTL_MS,
  maxEntries = DEFAULT_KEY_CACHE_MAX
): KeyCache => {
  // By hex digest. Map order is insertion order, so the first entry is the oldest.
  const entries = new Map<string, Entry>()
  let generation = 0

  const get = (digest: Buffer, now: number) => {
    const id = digest.toString("hex")
    const entry = entries.get(id)
    if (entry === undefined) return undefined
    if (now - entry.cachedAt >= ttlMs() || now < entry.cachedAt || !timingSafeEqual(entry.digest, digest)) {
      entries.delete(id)
      return undefined
    }
    return entry.expiresAt !== null && entry.expiresAt <= now ? "expired" : entry.key
  }

  const remember = (digest: Buffer, key: AuthenticatedKey, expiresAt: number | null, now: number, since: number) => {
    if (since !== generation) return key
    const id = digest.toString("hex")
    entries.delete(id)
    if (entries.size >= maxEntries) entries.delete(entries.keys().next().value as string)
    entries.set(id, { digest, key, expiresAt, cachedAt: now })
    return key
  }

  const forget = (keyId: string) => {
    generation++
    for (const [id, entry] of entries) if (entry.key.keyId === keyId) entries.delete(id)
  }

  const forgetAll = () => {
    generation++
    entries.clear()
  }

  return { get, generation: () => generation, remember, forget, forgetAll }
}
