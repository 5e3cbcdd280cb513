/**
 * Stored Responses API responses on both stores: saved and updated in place (a background response moving on), read
 * only by their account and only before they expire, items found by id, model text jsonb refuses made storable, and
 * the retention sweep deleting what expired (with its items).
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import * as PgResponseStore from "../../../src/adapters/store/PgResponseStore.ts"
import { ResponseStore, type StoredResponse } from "../../../src/app/ports/ResponseStore.ts"
import { availableStores } from "../../support/TestDatabase.ts"

const DAY = 86_400_000

const stored = (accountId: string, id: string, createdAt: Date, output: ReadonlyArray<unknown>): StoredResponse => ({
  id,
  accountId,
  keyId: randomUUID(),
  model: "m",
  status: "completed",
  previousResponseId: undefined,
  createdAt,
  expiresAt: new Date(createdAt.getTime() + 30 * DAY),
  request: { model: "m", store: true },
  inputItems: [{ id: `msg_in_${id}`, type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
  response: { id, object: "response", status: "completed", output }
})

for (const { target, storeLayer } of availableStores("response store")) {
  layer(PgResponseStore.layer.pipe(Layer.provideMerge(storeLayer)), {
    timeout: "60 seconds",
    excludeTestServices: true
  })(`stored responses on ${target.name}`, (it) => {
    it.effect("saved, updated, owned, indexed by item id, and swept when they expire", () =>
      Effect.gen(function* () {
        const store = yield* ResponseStore
        const owner = randomUUID()
        const other = randomUUID()
        const now = new Date()
        const id = `resp_${randomUUID().replaceAll("-", "")}`
        const message = {
          id: `msg_${id}`,
          type: "message",
          content: [{ type: "output_text", text: "a\u0000b\ud800c" }]
        }
        const queued = { ...stored(owner, id, now, []), status: "queued" }
        yield* store.save(queued, queued.inputItems)
        assert.strictEqual((yield* store.find(owner, id, now))?.status, "queued")
        // Finished: the same row moves on; the model's unstorable characters became U+FFFD.
        yield* store.save(stored(owner, id, now, [message]), [])
        const found = yield* store.find(owner, id, now)
        assert.strictEqual(found?.status, "completed")
        const output = found?.response.output as ReadonlyArray<{ content: ReadonlyArray<{ text: string }> }>
        assert.strictEqual(output[0].content[0].text, "a\ufffdb\ufffdc")
        assert.deepStrictEqual(found?.inputItems, queued.inputItems)
        assert.isUndefined(yield* store.find(other, id, now), "another account sees nothing")
        const items = yield* store.findItems(owner, [`msg_${id}`, `msg_in_${id}`, "msg_nope"], now)
        assert.deepStrictEqual([...items.keys()].sort(), [`msg_${id}`, `msg_in_${id}`].sort())
        assert.strictEqual((yield* store.findItems(other, [`msg_${id}`], now)).size, 0)
        // Past its expiry it is not served, and the sweep deletes it with its items.
        const later = new Date(now.getTime() + 31 * DAY)
        assert.isUndefined(yield* store.find(owner, id, later))
        assert.isAtLeast(yield* store.sweep(later), 1)
        assert.isUndefined(yield* store.find(owner, id, now))
        assert.strictEqual((yield* store.findItems(owner, [`msg_${id}`], now)).size, 0)
        // Deleting: only the owner's, once.
        const second = stored(owner, `${id}x`, now, [])
        yield* store.save(second, [])
        assert.isFalse(yield* store.remove(other, second.id))
        assert.isTrue(yield* store.remove(owner, second.id))
        assert.isFalse(yield* store.remove(owner, second.id))
      })
    )
  })
}
