import { assert, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as PgAccounts from "../../src/adapters/store/PgAccounts.ts"
import * as PgReplay from "../../src/adapters/store/PgReplay.ts"
import { Accounts } from "../../src/app/Accounts.ts"
import { defaultLedgerOptions, Ledger } from "../../src/app/Ledger.ts"
import { Replay } from "../../src/app/Replay.ts"
import { parseDecimal } from "../../src/domain/Money.ts"
import { availableStores } from "../support/TestDatabase.ts"

const usd = (text: string) => parseDecimal(text) as bigint

for (const { target, storeLayer } of availableStores("Ledger")) {
  const services = Layer.mergeAll(
    Ledger.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 }),
    PgAccounts.layer,
    PgReplay.layer
  ).pipe(Layer.provideMerge(storeLayer))

  layer(services, { timeout: "60 seconds", excludeTestServices: true })(`Ledger on ${target.name}`, (it) => {
    it.effect("200 concurrent holds of 1.00 on 50.00: exactly 50 succeed, nothing negative, replay agrees", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        const account = yield* ledger.openAccount("hot")
        yield* ledger.deposit(account.id, usd("50"), "initial")
        const exits = yield* Effect.forEach(
          Array.from({ length: 200 }),
          () =>
            Effect.exit(
              ledger.placeHold({
                accountId: account.id,
                amount: usd("1"),
                keyId: null,
                keySpendLimit: null,
                model: "m",
                plugin: "text",
                requestId: null
              })
            ),
          { concurrency: "unbounded" }
        )
        const succeeded = exits.filter(Exit.isSuccess).length
        assert.strictEqual(succeeded, 50)
        const view = yield* accounts.get(account.id)
        assert.strictEqual(view.held, usd("50"))
        assert.strictEqual(view.deposited - view.captured - view.held, 0n)
        const report = yield* (yield* Replay).verify
        assert.deepStrictEqual(report.mismatches, [])
        assert.isTrue(report.ok)
      })
    )

    it.effect("settle captures at most the hold and refunds the rest; a hold resolves exactly once", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        const account = yield* ledger.openAccount("settle")
        yield* ledger.deposit(account.id, usd("10"), "d1")
        const hold = yield* ledger.placeHold({
          accountId: account.id,
          amount: usd("2"),
          keyId: null,
          keySpendLimit: null,
          model: "m",
          plugin: "text",
          requestId: "r1"
        })
        const results = yield* Effect.forEach(
          [usd("0.5"), usd("0.7")],
          (cost) => Effect.exit(ledger.settle(account.id, hold.holdId, cost, { tokens: 1 })),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter(Exit.isSuccess).length, 1)
        const view = yield* accounts.get(account.id)
        assert.strictEqual(view.held, 0n)
        assert.isTrue(view.captured === usd("0.5") || view.captured === usd("0.7"))
        const release = yield* Effect.exit(ledger.release(account.id, hold.holdId, "failed"))
        assert.isTrue(Exit.isFailure(release))
        const events = yield* accounts.ledger(account.id, 0n, 100)
        assert.deepStrictEqual(
          events.map((e) => e.type),
          ["AccountOpened", "FundsDeposited", "HoldPlaced", "UsageRecalculated", "RefundIssued"]
        )
      })
    )

    it.effect("what one instance remembers of an account never outlives another instance's write to it", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        // A second instance on the same database: its own writer, its own memory of accounts.
        const other = Context.get(
          yield* Layer.build(Ledger.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 })),
          Ledger
        )
        const hold = (on: typeof ledger, amount: string) =>
          on.placeHold({
            accountId: account.id,
            amount: usd(amount),
            keyId: null,
            keySpendLimit: null,
            model: "m",
            plugin: "text",
            requestId: null
          })
        const account = yield* ledger.openAccount("two-instances")
        yield* ledger.deposit(account.id, usd("10"), "d1")
        const first = yield* hold(ledger, "1") // remembered here: 9.00 available
        yield* hold(other, "4") // written there: 5.00 available in truth
        const retriesBefore = ledger.writerStats().lockedRetries
        const tooMuch = yield* Effect.flip(hold(ledger, "6"))
        assert.strictEqual(tooMuch._tag === "LedgerRejected" && tooMuch.reason, "InsufficientBalance")
        // The remembered head was stale: the optimistic write collided and the batch was decided again, locked.
        assert.strictEqual(ledger.writerStats().lockedRetries, retriesBefore + 1)
        yield* other.release(account.id, first.holdId, "failed")
        const settledTwice = yield* Effect.flip(ledger.settle(account.id, first.holdId, usd("1"), { tokens: 1 }))
        assert.strictEqual(settledTwice._tag === "LedgerRejected" && settledTwice.reason, "HoldNotPending")
        yield* hold(ledger, "6") // fits now: 10 - 4
        const view = yield* accounts.get(account.id)
        assert.strictEqual(view.held, usd("10"))
        assert.strictEqual(view.captured, 0n)
        const report = yield* (yield* Replay).verify
        assert.deepStrictEqual(report.mismatches, [])
      }).pipe(Effect.scoped)
    )

    it.effect("a deposit reference is deposited once", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        const account = yield* ledger.openAccount("deposits")
        const results = yield* Effect.forEach(
          Array.from({ length: 5 }),
          () => ledger.deposit(account.id, usd("3"), "same-ref"),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter((r) => !r.duplicate).length, 1)
        assert.strictEqual((yield* accounts.get(account.id)).deposited, usd("3"))
      })
    )

    it.effect("expired holds are released by the sweep exactly once", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        const account = yield* ledger.openAccount("expiry")
        yield* ledger.deposit(account.id, usd("5"), "d")
        yield* ledger.placeHold({
          accountId: account.id,
          amount: usd("4"),
          keyId: null,
          keySpendLimit: null,
          model: null,
          plugin: null,
          requestId: null,
          ttlSeconds: 0
        })
        const released = yield* Effect.forEach([1, 2, 3], () => ledger.sweepExpiredHolds, { concurrency: "unbounded" })
        const view = yield* accounts.get(account.id)
        assert.strictEqual(view.held, 0n)
        assert.strictEqual(view.deposited - view.captured - view.held, usd("5"))
        const refunds = (yield* accounts.ledger(account.id, 0n, 100)).filter((e) => e.type === "RefundIssued")
        assert.strictEqual(refunds.length, 1)
        assert.isTrue(released.reduce((a, b) => a + b, 0) >= 1)
        const sql = yield* SqlClient.SqlClient
        const pending = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM holds WHERE status = 'pending'
          AND account_id = ${account.id}`
        assert.strictEqual(pending[0].n, 0)
      })
    )
  })
}
