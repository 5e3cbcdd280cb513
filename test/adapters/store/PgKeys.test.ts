/**
 * Keys cached until they change, across instances sharing one Postgres database (each instance its own client and
 * its own StoreNotifications): a key revoked through one instance is refused by another that had it cached, within
 * the time its NOTIFY takes to arrive — not the cache's 30-second backstop; while the instance listens, a cached key
 * is not read again every second; when its listening connection dies, it forgets every key at once.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as Database from "../../../src/adapters/store/Database.ts"
import * as PgKeys from "../../../src/adapters/store/PgKeys.ts"
import { StoreNotifications } from "../../../src/adapters/store/StoreNotifications.ts"
import { Keys } from "../../../src/app/Keys.ts"
import { createPostgresDatabase } from "../../support/TestDatabase.ts"

const baseUrl = process.env.TEST_DATABASE_URL

const instance = (url: string) =>
  PgKeys.layer.pipe(
    Layer.provideMerge(StoreNotifications.layer),
    Layer.provideMerge(Database.layer({ kind: "postgres", url: Redacted.make(url), maxConnections: 4 }))
  )

const build = (url: string) =>
  Effect.map(Layer.build(instance(url)), (context) => ({
    keys: Context.get(context, Keys),
    notifications: Context.get(context, StoreNotifications),
    sql: Context.get(context, SqlClient.SqlClient)
  }))

type Instance = Effect.Success<ReturnType<typeof build>>

const until = (what: string, check: () => boolean, timeoutMs = 20_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("20 millis")
    }
  })

const refusal = (instance: Instance, key: string) =>
  Effect.map(Effect.result(instance.keys.authenticate(key)), (result) =>
    result._tag === "Failure" && result.failure._tag === "KeyRejected" ? result.failure.reason : undefined
  )

describe.skipIf(baseUrl === undefined || baseUrl === "")("keys cached across instances (Postgres)", () => {
  let database: { readonly url: string; drop(): Promise<void> }
  beforeAll(async () => {
    database = await createPostgresDatabase(baseUrl as string)
  }, 60_000)
  afterAll(async () => {
    await database?.drop()
  })

  const twoInstances = (
    body: (a: Instance, b: Instance, accountId: string) => Effect.Effect<void, unknown, Scope.Scope>
  ) =>
    Effect.gen(function* () {
      const a = yield* build(database.url)
      const b = yield* build(database.url)
      yield* until("both instances listening", () => a.notifications.complete() && b.notifications.complete())
      const accountId = randomUUID()
      yield* a.sql`INSERT INTO accounts (id, name, created_at, deposited, captured, held, version)
        VALUES (${accountId}, 'keys', now(), 0, 0, 0, 0)`
      yield* body(a, b, accountId)
    }).pipe(Effect.scoped)

  const newKey = (instance: Instance, accountId: string) =>
    instance.keys.create(accountId, { name: "k", models: null, expiresAt: null, spendLimit: null })

  it.live(
    "a key revoked through one instance is refused by another that had it cached, as soon as the change is heard",
    () =>
      twoInstances((a, b, accountId) =>
        Effect.gen(function* () {
          const created = yield* newKey(a, accountId)
          assert.strictEqual((yield* b.keys.authenticate(created.key)).keyId, created.id)
          const revokedAt = Date.now()
          yield* a.keys.revoke(created.id)
          let reason: string | undefined
          while (reason === undefined) {
            reason = yield* refusal(b, created.key)
            if (Date.now() - revokedAt > 5_000) break
            if (reason === undefined) yield* Effect.sleep("10 millis")
          }
          assert.strictEqual(reason, "revoked")
          // Heard, not expired: well inside the 30-second backstop (and, unloaded, inside a few milliseconds).
          assert.isBelow(Date.now() - revokedAt, 5_000)
        })
      ),
    60_000
  )

  it.live(
    "while listening, a cached key is not read again every second; a dead listening connection forgets every key",
    () =>
      twoInstances((a, b, accountId) =>
        Effect.gen(function* () {
          const created = yield* newKey(a, accountId)
          yield* b.keys.authenticate(created.key)
          // A change that sends no notification (written behind the API's back) stays unseen while cached...
          yield* a.sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${created.id}`
          yield* Effect.sleep("1500 millis")
          assert.strictEqual((yield* b.keys.authenticate(created.key)).keyId, created.id)
          // ...until the instance's listening connection dies: it may have missed changes, so it forgets them all.
          yield* a.sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`
          yield* until("the listeners to notice", () => !b.notifications.complete())
          assert.strictEqual(yield* refusal(b, created.key), "revoked")
          yield* until("listening again", () => b.notifications.complete())
        })
      ),
    60_000
  )
})
