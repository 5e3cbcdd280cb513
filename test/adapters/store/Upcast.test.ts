/** Events stored in an older schema version are read in the current one, on both stores. */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import * as PgEventStore from "../../../src/adapters/store/PgEventStore.ts"
import { EventStore } from "../../../src/app/EventStore.ts"
import { availableStores } from "../../support/TestDatabase.ts"

for (const { target, storeLayer } of availableStores("upcasting")) {
  layer(PgEventStore.layer.pipe(Layer.provideMerge(storeLayer)), { excludeTestServices: true })(
    `upcasting on ${target.name}`,
    (it) => {
      it.effect("a version-1 UsageRecalculated reads back as version 2 with metrics", () =>
        Effect.gen(function* () {
          const store = yield* EventStore
          const stream = `account-${randomUUID()}`
          yield* store.append(
            stream,
            "no_stream",
            [
              {
                eventId: randomUUID(),
                type: "UsageRecalculated",
                schemaVersion: 1,
                data: { accountId: "a", holdId: "h", cost: "0.1", captured: "0.1", usage: { inputTokens: 4 }, at: "x" }
              }
            ],
            new Date()
          )
          const [event] = yield* store.readStream(stream)
          assert.strictEqual(event.schemaVersion, 2)
          assert.deepStrictEqual((event.data as { metrics: unknown }).metrics, {
            inputTokens: 4,
            outputTokens: 0,
            images: 0,
            videoSeconds: 0
          })
        })
      )
    }
  )
}
