/**
 * Changes other instances sharing the database make, heard as they commit: a write that must reach every instance's
 * caches (a key revoked, an alert endpoint added or removed) sends `notifyChange` in its own transaction, and Postgres
 * delivers it to every instance's `LISTEN` when that transaction commits. Caches here may then keep what they read
 * until it changes instead of re-reading it every second.
 *
 * `complete()` says whether this instance hears every change right now: on Postgres, while its `LISTEN` is up (from
 * the moment Postgres confirmed it); a lost connection makes it false, tells every subscriber to forget everything
 * (changes may have been missed), and it listens again a second later. The embedded store is one process, whose own
 * writes call their cache directly, so it is always complete and never listens (its one connection must stay free).
 * A connection that dies silently is not noticed at once: callers still bound how long they trust a cached value.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Queue } from "effect"
import type { SqlClient, Statement } from "effect/sql"
import { StoreInfo } from "./Database.ts"

const CHANNEL = "tollgate_changes"

export type ChangeTopic = "key" | "alert_endpoints"

/** `id` undefined: anything of the topic may have changed. */
export type ChangeListener = (id: string | undefined) => void

export class StoreNotifications extends Context.Service<
  StoreNotifications,
  {
    readonly complete: () => boolean
    readonly subscribe: (topic: ChangeTopic, listener: ChangeListener) => void
  }
>()("tollgate/adapters/store/StoreNotifications") {
  static readonly layer = Layer.effect(
    StoreNotifications,
    Effect.gen(function* () {
      const listeners = new Map<ChangeTopic, Array<ChangeListener>>()
      const subscribe = (topic: ChangeTopic, listener: ChangeListener) => {
        const list = listeners.get(topic) ?? []
        list.push(listener)
        listeners.set(topic, list)
      }
      const forgetEverything = () => {
        for (const list of listeners.values()) for (const listener of list) listener(undefined)
      }
      const dispatch = (payload: string) => {
        const colon = payload.indexOf(":")
        const topic = (colon < 0 ? payload : payload.slice(0, colon)) as ChangeTopic
        const id = colon < 0 ? undefined : payload.slice(colon + 1)
        for (const listener of listeners.get(topic) ?? []) listener(id)
      }
      if ((yield* StoreInfo).kind === "pglite") return StoreNotifications.of({ complete: () => true, subscribe })

      const pg = yield* PgClient.PgClient
      let listening = false
      const listenOnce = Effect.scoped(
        Effect.gen(function* () {
          const queue = yield* pg.listen(CHANNEL)
          listening = true
          // Whatever changed before the LISTEN was confirmed was not heard.
          forgetEverything()
          for (;;) dispatch((yield* Queue.take(queue)).payload)
        })
      )
      yield* listenOnce.pipe(
        Effect.catchCause(() => Effect.void),
        Effect.andThen(
          Effect.sync(() => {
            listening = false
            forgetEverything()
          })
        ),
        Effect.andThen(Effect.sleep("1 second")),
        Effect.forever,
        Effect.forkScoped
      )
      return StoreNotifications.of({ complete: () => listening, subscribe })
    })
  )
}

/** Sent inside the writing transaction: every instance hears it when (and only if) the transaction commits. */
export const notifyChange = (sql: SqlClient.SqlClient, topic: ChangeTopic, id: string): Statement.Statement<unknown> =>
  sql`SELECT pg_notify(${CHANNEL}, ${`${topic}:${id}`})`
