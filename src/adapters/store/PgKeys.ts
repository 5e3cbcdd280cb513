/**
 * API keys on Postgres/PGlite: `KeyCreated`/`KeyRevoked` events in the key's stream and the `api_keys` projection,
 * written in one transaction. Presented keys are hashed and looked up by hash; the stored and computed digests are
 * then compared in constant time.
 */
import { noRateLimits } from "../../domain/keys/RateLimits.ts"
import { Clock, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto"
import { type CreateKeyInput, KeyNotFound, KeyRejected, Keys, type KeyView } from "../../app/Keys.ts"
import { LedgerRejected } from "../../app/LedgerErrors.ts"
import { accountStream, isUuid, keyStream } from "../../domain/Ids.ts"
import {
  displayPrefix,
  formatKey,
  isWellFormedKey,
  KEY_RANDOM_BYTES,
  type KeyCreated
} from "../../domain/keys/ApiKey.ts"
import { formatMicros } from "../../domain/Money.ts"
import { DEFAULT_KEY_CACHE_TTL_MS, HEARD_KEY_CACHE_TTL_MS, makeKeyCache } from "./KeyCache.ts"
import { notifyChange, StoreNotifications } from "./StoreNotifications.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { appendMany } from "./EventAppends.ts"
import { traced } from "../../app/Traced.ts"

interface KeyRow {
  id: string
  account_id: string
  name: string
  prefix: string
  created_at: Date
  last_used_at: Date | null
  expires_at: Date | null
  models: ReadonlyArray<string> | null
  spend_limit: bigint | null
  rpm: number | null
  tpm: number | null
  concurrency: number | null
  spent: bigint
  held: bigint
  revoked_at: Date | null
}

const KEY_COLUMNS =
  "id, account_id, name, prefix, created_at, last_used_at, expires_at, models, spend_limit, rpm, tpm, concurrency, spent, held, revoked_at"

const iso = (value: Date | null) => (value === null ? null : value.toISOString())

const toView = (row: KeyRow): KeyView => ({
  id: row.id,
  name: row.name,
  accountId: row.account_id,
  prefix: row.prefix,
  createdAt: row.created_at.toISOString(),
  lastUsedAt: iso(row.last_used_at),
  expiresAt: iso(row.expires_at),
  models: row.models,
  spendLimit: row.spend_limit,
  rateLimits: { rpm: row.rpm, tpm: row.tpm, concurrency: row.concurrency },
  spent: row.spent,
  held: row.held,
  revokedAt: iso(row.revoked_at)
})

export const hashKey = (secret: string): Buffer => createHash("sha256").update(secret).digest()

/** How often a key's `last_used_at` is written at most: it is a hint, not an event. */
const LAST_USED_RESOLUTION_MS = 60_000

export const layer = Layer.effect(
  Keys,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const lastUsedWrites = new Map<string, number>()
    // Accepted keys are remembered: no query per request on a busy key. A revocation here or heard from another
    // instance forgets the key at once; while revocations cannot be heard, nothing is trusted for more than a second.
    const notifications = Option.getOrUndefined(yield* Effect.serviceOption(StoreNotifications))
    const keyCache = makeKeyCache(() =>
      notifications?.complete() === true ? HEARD_KEY_CACHE_TTL_MS : DEFAULT_KEY_CACHE_TTL_MS
    )
    notifications?.subscribe("key", (keyId) => (keyId === undefined ? keyCache.forgetAll() : keyCache.forget(keyId)))

    const accountExists = (accountId: string) =>
      Effect.gen(function* () {
        const rows = isUuid(accountId)
          ? yield* sql<{ id: string }>`SELECT id FROM accounts WHERE id = ${accountId}`.pipe(orUnavailable)
          : []
        if (rows.length === 0) {
          return yield* new LedgerRejected({
            reason: "AccountNotFound",
            message: `account ${accountId} does not exist`
          })
        }
      })

    const create = Effect.fnUntraced(function* (accountId: string, given: CreateKeyInput) {
      const input = { ...given, rateLimits: given.rateLimits ?? noRateLimits }
      yield* accountExists(accountId)
      const now = new Date(yield* Clock.currentTimeMillis)
      const key = formatKey(randomBytes(KEY_RANDOM_BYTES))
      const keyId = randomUUID()
      const digest = hashKey(key)
      const event: KeyCreated = {
        type: "KeyCreated",
        data: {
          keyId,
          accountId,
          name: input.name,
          prefix: displayPrefix(key),
          keyHash: digest.toString("hex"),
          models: input.models,
          expiresAt: input.expiresAt,
          spendLimit: input.spendLimit === null ? null : formatMicros(input.spendLimit),
          rateLimits: input.rateLimits,
          at: now.toISOString()
        }
      }
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* appendMany(
              sql,
              [
                {
                  stream: keyStream(keyId),
                  expected: "no_stream",
                  events: [{ eventId: randomUUID(), type: event.type, data: event.data, metadata: { actor: "admin" } }]
                }
              ],
              now
            )
            yield* sql`
              INSERT INTO api_keys (id, account_id, name, prefix, key_hash, created_at, expires_at, models, spend_limit,
                rpm, tpm, concurrency)
              VALUES (${keyId}, ${accountId}, ${input.name}, ${event.data.prefix}, ${digest}, ${now},
                ${input.expiresAt === null ? null : new Date(input.expiresAt)}, ${input.models}::text[],
                ${input.spendLimit}, ${input.rateLimits.rpm}, ${input.rateLimits.tpm}, ${input.rateLimits.concurrency})`
          })
        )
        .pipe(
          orUnavailable,
          Effect.catchTag("StreamVersionConflict", () => Effect.die("a fresh key id collided")) // random uuid: a bug
        )
      const view: KeyView = {
        id: keyId,
        name: input.name,
        accountId,
        prefix: event.data.prefix,
        createdAt: now.toISOString(),
        lastUsedAt: null,
        expiresAt: input.expiresAt,
        models: input.models,
        spendLimit: input.spendLimit,
        rateLimits: input.rateLimits,
        spent: 0n,
        held: 0n,
        revokedAt: null
      }
      return { ...view, key }
    }, traced("Keys.create"))

    const list = Effect.fnUntraced(function* (accountId: string) {
      yield* accountExists(accountId)
      const rows = yield* sql<KeyRow>`
        SELECT ${sql.literal(KEY_COLUMNS)} FROM api_keys WHERE account_id = ${accountId}
        ORDER BY created_at, id`.pipe(orUnavailable)
      return rows.map(toView)
    }, traced("Keys.list"))

    const revoke = Effect.fnUntraced(function* (keyId: string) {
      if (!isUuid(keyId)) return yield* new KeyNotFound({ keyId })
      // Forgotten before and after the write: a lookup racing the revocation cannot leave the key remembered.
      keyCache.forget(keyId)
      const now = new Date(yield* Clock.currentTimeMillis)
      const row = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const rows = yield* sql<KeyRow>`
              SELECT ${sql.literal(KEY_COLUMNS)} FROM api_keys WHERE id = ${keyId} FOR UPDATE`
            if (rows.length === 0) return yield* new KeyNotFound({ keyId })
            const current = rows[0]
            if (current.revoked_at !== null) return current // revoking twice is a no-op, not an error
            yield* appendMany(
              sql,
              [
                {
                  stream: keyStream(keyId),
                  expected: "any",
                  events: [
                    {
                      eventId: randomUUID(),
                      type: "KeyRevoked",
                      data: { keyId, accountId: current.account_id, at: now.toISOString() },
                      metadata: { actor: "admin" }
                    }
                  ]
                }
              ],
              now
            )
            yield* sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${keyId}`
            // Every instance forgets the key when this commits.
            yield* notifyChange(sql, "key", keyId)
            return { ...current, revoked_at: now }
          })
        )
        .pipe(
          orUnavailable,
          Effect.catchTag("StreamVersionConflict", () => Effect.die("expected version any"))
        )
      keyCache.forget(keyId)
      return toView(row)
    }, traced("Keys.revoke"))

    const authenticate = Effect.fnUntraced(function* (secret: string | undefined) {
      if (secret === undefined || secret.length === 0) return yield* new KeyRejected({ reason: "missing" })
      if (!isWellFormedKey(secret)) return yield* new KeyRejected({ reason: "malformed" })
      const digest = hashKey(secret)
      const now = yield* Clock.currentTimeMillis
      const remembered = keyCache.get(digest, now)
      if (remembered === "expired") return yield* new KeyRejected({ reason: "expired" })
      if (remembered !== undefined) return remembered
      const since = keyCache.generation()
      const rows = yield* sql<{
        id: string
        account_id: string
        key_hash: Uint8Array
        models: ReadonlyArray<string> | null
        spend_limit: bigint | null
        rpm: number | null
        tpm: number | null
        concurrency: number | null
        expires_at: Date | null
        revoked_at: Date | null
      }>`SELECT id, account_id, key_hash, models, spend_limit, rpm, tpm, concurrency, expires_at, revoked_at FROM api_keys
         WHERE key_hash = ${digest}`.pipe(orUnavailable)
      const row = rows[0]
      if (row === undefined || !timingSafeEqual(Buffer.from(row.key_hash), digest)) {
        return yield* new KeyRejected({ reason: "unknown" })
      }
      if (row.revoked_at !== null) return yield* new KeyRejected({ reason: "revoked" })
      if (row.expires_at !== null && row.expires_at.getTime() <= now) {
        return yield* new KeyRejected({ reason: "expired" })
      }
      const lastWrite = lastUsedWrites.get(row.id) ?? 0
      if (now - lastWrite >= LAST_USED_RESOLUTION_MS) {
        lastUsedWrites.set(row.id, now)
        yield* sql`UPDATE api_keys SET last_used_at = ${new Date(now)} WHERE id = ${row.id}`.pipe(
          Effect.ignore,
          Effect.forkDetach
        )
      }
      const key = {
        keyId: row.id,
        accountId: row.account_id,
        models: row.models,
        spendLimit: row.spend_limit,
        rateLimits: { rpm: row.rpm, tpm: row.tpm, concurrency: row.concurrency }
      }
      return keyCache.remember(digest, key, row.expires_at === null ? null : row.expires_at.getTime(), now, since)
    }, traced("Keys.authenticate"))

    return Keys.of({ create, list, revoke, authenticate })
  })
)

export { accountStream }
