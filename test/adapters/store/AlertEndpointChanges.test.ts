/**
 * Alert endpoints added or removed through one instance are heard by another sharing the Postgres database (each its
 * own client and StoreNotifications), for the account they belong to, as the change commits: what lets `Alerts` keep
 * an account's endpoints cached until they change.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { randomUUID } from "node:crypto"
import * as Database from "../../../src/adapters/store/Database.ts"
import * as PgAlertStore from "../../../src/adapters/store/PgAlertStore.ts"
import { StoreNotifications } from "../../../src/adapters/store/StoreNotifications.ts"
import { AlertStore } from "../../../src/app/ports/AlertStore.ts"
import { createPostgresDatabase } from "../../support/TestDatabase.ts"

const baseUrl = process.env.TEST_DATABASE_URL

const build = (url: string) =>
  Effect.map(
    Layer.build(
      PgAlertStore.layer.pipe(
        Layer.provideMerge(StoreNotifications.layer),
        Layer.provideMerge(Database.layer({ kind: "postgres", url: Redacted.make(url), maxConnections: 4 }))
      )
    ),
    (context) => ({ store: Context.get(context, AlertStore), notifications: Context.get(context, StoreNotifications) })
  )

const until = (what: string, check: () => boolean) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 20_000
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`))
      yield* Effect.sleep("20 millis")
    }
  })

describe.skipIf(baseUrl === undefined || baseUrl === "")("alert endpoint changes across instances (Postgres)", () => {
  let database: { readonly url: string; drop(): Promise<void> }
  beforeAll(async () => {
    database = await createPostgresDatabase(baseUrl as string)
  }, 60_000)
  afterAll(async () => {
    await database?.drop()
  })

  it.live(
    "another instance hears an endpoint added and removed, for its account",
    () =>
      Effect.gen(function* () {
        const a = yield* build(database.url)
        const b = yield* build(database.url)
        const heard: Array<string | undefined> = []
        b.store.changes?.subscribe((accountId) => heard.push(accountId))
        yield* until("both instances listening", () => a.notifications.complete() && b.notifications.complete())
        assert.isTrue(b.store.changes?.complete())
        heard.length = 0
        const accountId = randomUUID()
        const id = randomUUID()
        yield* a.store.addEndpoint({
          id,
          accountId,
          url: "https://hooks.example/a",
          events: ["*"],
          secret: "whsec_changes_123",
          balanceBelow: null,
          createdAt: new Date()
        })
        yield* until("the addition heard", () => heard.includes(accountId))
        heard.length = 0
        assert.isTrue(yield* a.store.removeEndpoint(id))
        yield* until("the removal heard", () => heard.includes(accountId))
        // Removing what is gone changes nothing and says nothing.
        heard.length = 0
        assert.isFalse(yield* a.store.removeEndpoint(id))
        yield* Effect.sleep("300 millis")
        assert.deepStrictEqual(heard, [])
      }).pipe(Effect.scoped),
    60_000
  )
})
