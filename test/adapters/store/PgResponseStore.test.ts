/**
 * Stored Responses API responses on both stores: a delivered turn committed in one transaction with its bill (the
 * hold lease's progress) and its conversation's items, read only by its account and only before it expires, items
 * found by id (indexed, not copied), model text jsonb refuses made storable, a chain of turns read back in one
 * statement, and the retention sweep deleting what expired (with its items).
 */
import { assert, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as PgResponseStore from "../../../src/adapters/store/PgResponseStore.ts"
import * as PgConversations from "../../../src/adapters/store/PgConversations.ts"
import { ConversationStore } from "../../../src/app/ports/ConversationStore.ts"
import { type JsonObject, ResponseStore, type StoredResponse } from "../../../src/app/ports/ResponseStore.ts"
import { availableStores } from "../../support/TestDatabase.ts"

const DAY = 86_400_000

const stored = (
  accountId: string,
  id: string,
  createdAt: Date,
  output: ReadonlyArray<JsonObject>,
  previousResponseId?: string
): StoredResponse => ({
  id,
  accountId,
  keyId: randomUUID(),
  model: "m",
  status: "completed",
  previousResponseId,
  createdAt,
  expiresAt: new Date(createdAt.getTime() + 30 * DAY),
  request: { model: "m", store: true },
  turnItems: [{ id: `msg_in_${id}`, type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }],
  response: { id, object: "response", status: "completed", output },
  background: false
})

const commitOf = (response: StoredResponse) => ({ response, outbox: undefined, conversation: undefined })

/** A response store whose statements are counted (every statement is one call of the client's template tag). */
const countedStore = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  let statements = 0
  const counted = new Proxy(sql, {
    apply: (target, self, args) => {
      statements += 1
      return Reflect.apply(target as never, self, args)
    }
  })
  const context = yield* Layer.build(
    Layer.fresh(PgResponseStore.layer).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient, counted)))
  )
  return { store: Context.get(context, ResponseStore), statements: () => statements }
})

for (const { target, storeLayer } of availableStores("response store")) {
  layer(Layer.mergeAll(PgResponseStore.layer, PgConversations.layer).pipe(Layer.provideMerge(storeLayer)), {
    timeout: "60 seconds",
    excludeTestServices: true
  })(`stored responses on ${target.name}`, (it) => {
    it.effect("committed, owned, indexed by item id, and swept when they expire", () =>
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
        yield* store.commit(commitOf(stored(owner, id, now, [message])))
        const found = yield* store.find(owner, id, now)
        assert.strictEqual(found?.status, "completed")
        const output = found?.response.output as ReadonlyArray<{ content: ReadonlyArray<{ text: string }> }>
        assert.strictEqual(output[0].content[0].text, "a\ufffdb\ufffdc", "unstorable model text became U+FFFD")
        assert.isUndefined(yield* store.find(other, id, now), "another account sees nothing")
        assert.isUndefined(yield* store.chain(other, id, now), "nor its chain")
        const items = yield* store.findItems(owner, [`msg_${id}`, `msg_in_${id}`, "msg_nope"], now)
        assert.deepStrictEqual([...items.keys()].sort(), [`msg_${id}`, `msg_in_${id}`].sort())
        assert.strictEqual(
          (items.get(`msg_${id}`)?.content as ReadonlyArray<{ text: string }> | undefined)?.[0]?.text,
          "a\ufffdb\ufffdc"
        )
        assert.strictEqual((yield* store.findItems(other, [`msg_${id}`], now)).size, 0)
        const later = new Date(now.getTime() + 31 * DAY)
        assert.isUndefined(yield* store.find(owner, id, later))
        assert.isAtLeast(yield* store.sweep(later), 1)
        assert.isUndefined(yield* store.find(owner, id, now))
        assert.strictEqual((yield* store.findItems(owner, [`msg_${id}`], now)).size, 0)
        const second = stored(owner, `${id}x`, now, [])
        yield* store.commit(commitOf(second))
        assert.isFalse(yield* store.remove(other, second.id))
        assert.isTrue(yield* store.remove(owner, second.id))
        assert.isFalse(yield* store.remove(owner, second.id))
      })
    )

    it.effect("a turn's bill is written with it, as its hold's progress; its conversation gets its items", () =>
      Effect.gen(function* () {
        const store = yield* ResponseStore
        const conversations = yield* ConversationStore
        const sql = yield* SqlClient.SqlClient
        const owner = randomUUID()
        const now = new Date()
        const conversationId = `conv_${randomUUID().replaceAll("-", "")}`
        yield* conversations.create({ id: conversationId, accountId: owner, metadata: {}, createdAt: now }, [])
        const id = `resp_${randomUUID().replaceAll("-", "")}`
        const holdId = randomUUID()
        const response = stored(owner, id, now, [{ id: `msg_${id}`, type: "message", content: [] }])
        yield* store.commit({
          response,
          outbox: { holdId, accountId: owner, cost: 1234n, usage: { outputTokens: 5 }, leaseUntil: now },
          conversation: { conversationId, accountId: owner, items: response.turnItems, at: now }
        })
        const leases = yield* sql<{ cost: string }>`SELECT cost::text FROM hold_leases WHERE hold_id = ${holdId}::uuid`
        assert.deepStrictEqual(leases, [{ cost: "1234" }])
        const items = yield* conversations.items(owner, conversationId)
        assert.deepStrictEqual(
          items?.map((item) => item.id),
          [`msg_in_${id}`]
        )
        assert.isUndefined(yield* conversations.items(randomUUID(), conversationId), "another account's: none")
      })
    )

    it.effect("a chain of 200 turns is read back whole, oldest first, in one statement", () =>
      Effect.gen(function* () {
        const store = yield* ResponseStore
        const owner = randomUUID()
        const now = new Date()
        let previous: string | undefined
        const ids: Array<string> = []
        for (let turn = 0; turn < 200; turn++) {
          const id = `resp_${turn}_${randomUUID().replaceAll("-", "")}`
          yield* store.commit(
            commitOf(stored(owner, id, now, [{ id: `out_${id}`, type: "message", content: [] }], previous))
          )
          ids.push(id)
          previous = id
        }
        const counted = yield* countedStore
        const chain = yield* counted.store.chain(owner, previous as string, now)
        assert.strictEqual(counted.statements(), 1, "one statement for the whole chain")
        assert.strictEqual(chain?.response.id, previous)
        assert.strictEqual(chain?.history.length, 400, "each turn's input and output, once")
        assert.deepStrictEqual(
          chain?.history.slice(0, 4).map((item) => item.id),
          [`msg_in_${ids[0]}`, `out_${ids[0]}`, `msg_in_${ids[1]}`, `out_${ids[1]}`]
        )
      })
    )
  })
}
