/**
 * The alert outbox on both stores: an event queued twice is one row per endpoint; due rows are leased to one worker
 * at a time (another finds nothing until the lease expires); outcomes are recorded only by the lease's owner; a
 * failure is due again at its retry time, or final; a resend makes a row due again; endpoints keep their secret.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import * as PgAlertStore from "../../../src/adapters/store/PgAlertStore.ts"
import { type AlertEvent, AlertStore } from "../../../src/app/ports/AlertStore.ts"
import { availableStores } from "../../support/TestDatabase.ts"

const event = (accountId: string): AlertEvent => ({
  id: `evt_${randomUUID().replaceAll("-", "")}`,
  type: "balance.low",
  accountId,
  createdAt: new Date().toISOString(),
  data: { available: "1.000000", note: "\u00e9" }
})

for (const { target, storeLayer } of availableStores("alert store")) {
  layer(PgAlertStore.layer.pipe(Layer.provideMerge(storeLayer)), { timeout: "60 seconds", excludeTestServices: true })(
    `alert outbox on ${target.name}`,
    (it) => {
      it.effect("queues once, leases to one worker, records outcomes, retries and resends", () =>
        Effect.gen(function* () {
          const store = yield* AlertStore
          const accountId = randomUUID()
          const endpointId = randomUUID()
          yield* store.addEndpoint({
            id: endpointId,
            accountId,
            url: "https://hooks.example/a",
            events: ["*"],
            secret: "whsec_stored_secret_123",
            balanceBelow: 5_000_000n,
            createdAt: new Date()
          })
          const [endpoint] = yield* store.endpointsOf(accountId)
          assert.strictEqual(endpoint?.balanceBelow, 5_000_000n)
          const raised = event(accountId)
          const now = new Date(Date.now() - 1000)
          const to = [
            { id: endpointId, url: "https://hooks.example/a" },
            { id: "config:0:abc", url: "https://ops.example/b" }
          ]
          assert.strictEqual(yield* store.enqueue(raised, to, now), 2)
          assert.strictEqual(yield* store.enqueue(raised, to, now), 0, "the same event again: nothing new")

          const leaseUntil = new Date(Date.now() + 60_000)
          const leased = (yield* store.leaseDue("w1", new Date(), leaseUntil, 100, ["config:0:abc"])).filter(
            (row) => row.accountId === accountId
          )
          assert.strictEqual(leased.length, 2)
          assert.deepStrictEqual(
            leased.map((row) => row.attempts),
            [1, 1]
          )
          const stored = leased.find((row) => row.endpoint === endpointId)
          assert.strictEqual(stored?.storedSecret, "whsec_stored_secret_123")
          assert.strictEqual(leased.find((row) => row.endpoint !== endpointId)?.storedSecret, null)
          assert.deepStrictEqual(stored?.payload, raised)
          const again = (yield* store.leaseDue("w2", new Date(), leaseUntil, 100, ["config:0:abc"])).filter(
            (row) => row.accountId === accountId
          )
          assert.strictEqual(again.length, 0, "leased rows are another worker's")

          // Only the owner records an outcome.
          yield* store.finish("w2", stored?.id ?? "", { _tag: "Delivered", status: 200, at: new Date() })
          const [first, second] = leased
          yield* store.finish("w1", first?.id ?? "", { _tag: "Delivered", status: 204, at: new Date() })
          yield* store.finish("w1", second?.id ?? "", {
            _tag: "Failed",
            status: 503,
            error: "the endpoint answered HTTP 503",
            retryAt: new Date(Date.now() - 10)
          })
          const rows = yield* store.deliveries({ accountId, limit: 10 })
          const byId = new Map(rows.map((row) => [row.id, row]))
          assert.strictEqual(byId.get(first?.id ?? "")?.status, "delivered")
          assert.strictEqual(byId.get(second?.id ?? "")?.status, "pending")
          assert.strictEqual(byId.get(second?.id ?? "")?.lastStatus, 503)
          assert.strictEqual((yield* store.deliveries({ accountId, status: "delivered", limit: 10 })).length, 1)

          // Due again at its retry time; a final failure is not.
          const retried = (yield* store.leaseDue("w2", new Date(), leaseUntil, 100, ["config:0:abc"])).filter(
            (row) => row.accountId === accountId
          )
          assert.deepStrictEqual(
            retried.map((row) => [row.id, row.attempts]),
            [[second?.id, 2]]
          )
          yield* store.finish("w2", second?.id ?? "", { _tag: "Failed", status: null, error: "gone", retryAt: null })
          assert.strictEqual(
            (yield* store.leaseDue("w3", new Date(), leaseUntil, 100, ["config:0:abc"])).filter(
              (row) => row.accountId === accountId
            ).length,
            0
          )
          assert.strictEqual(
            (yield* store.deliveries({ accountId, status: "failed", limit: 10 }))[0]?.lastError,
            "gone"
          )

          // A resend: pending and due now, attempts from zero.
          assert.isTrue(yield* store.resend(first?.id ?? "", new Date()))
          assert.isFalse(yield* store.resend(randomUUID(), new Date()))
          const resent = (yield* store.leaseDue("w3", new Date(), leaseUntil, 100, ["config:0:abc"])).filter(
            (row) => row.accountId === accountId
          )
          assert.deepStrictEqual(
            resent.map((row) => [row.id, row.attempts]),
            [[first?.id, 1]]
          )

          // A config webhook this worker does not know (another instance's config) is left to that instance.
          const foreign = { ...event(accountId), id: `evt_${randomUUID().replaceAll("-", "")}` }
          assert.strictEqual(yield* store.enqueue(foreign, [{ id: "config:9:zzz", url: "https://x.example" }], now), 1)
          const mine = yield* store.leaseDue("w4", new Date(), leaseUntil, 100, ["config:0:abc"])
          assert.isFalse(mine.some((row) => row.eventId === foreign.id))
          const theirs = yield* store.leaseDue("w5", new Date(), leaseUntil, 100, ["config:9:zzz"])
          assert.isTrue(theirs.some((row) => row.eventId === foreign.id))

          assert.isTrue(yield* store.removeEndpoint(endpointId))
          assert.isFalse(yield* store.removeEndpoint(endpointId))
        })
      )
    }
  )
}
