/**
 * The key cache's rules: a lookup that began before a revocation is not remembered (it may have read the key before
 * the revocation committed), entries live as long as the cache's TTL says at each hit, and forgetting all empties it.
 */
import { assert, describe, it } from "@effect/vitest"
import { createHash } from "node:crypto"
import { makeKeyCache } from "../../../src/adapters/store/KeyCache.ts"
import type { AuthenticatedKey } from "../../../src/app/Keys.ts"

const digest = (secret: string) => createHash("sha256").update(secret).digest()
const key = (keyId: string): AuthenticatedKey => ({
  keyId,
  accountId: "a",
  models: null,
  spendLimit: null,
  rateLimits: { rpm: null, tpm: null, concurrency: null }
})

describe("KeyCache", () => {
  it("does not remember a lookup that began before a key was forgotten", () => {
    const cache = makeKeyCache(() => 30_000)
    const since = cache.generation()
    // The revocation lands while the store is being read: the row read may predate it.
    cache.forget("k1")
    cache.remember(digest("s1"), key("k1"), null, 0, since)
    assert.isUndefined(cache.get(digest("s1"), 1))
    // A lookup begun after it is remembered.
    cache.remember(digest("s1"), key("k1"), null, 2, cache.generation())
    assert.strictEqual((cache.get(digest("s1"), 3) as AuthenticatedKey).keyId, "k1")
  })

  it("trusts an entry for the TTL in force at each hit, and forgets everything at once", () => {
    let ttl = 30_000
    const cache = makeKeyCache(() => ttl)
    cache.remember(digest("s1"), key("k1"), null, 0, cache.generation())
    cache.remember(digest("s2"), key("k2"), null, 0, cache.generation())
    assert.isDefined(cache.get(digest("s1"), 5_000))
    ttl = 1_000 // no longer hearing every change: a second at most
    assert.isUndefined(cache.get(digest("s1"), 5_000))
    ttl = 30_000
    assert.isDefined(cache.get(digest("s2"), 5_000))
    cache.forgetAll()
    assert.isUndefined(cache.get(digest("s2"), 5_001))
  })
})
