import { assert, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FileSettlementJournal from "../../src/adapters/journal/FileSettlementJournal.ts"
import { JOURNAL_FILE } from "../../src/adapters/journal/FileSettlementJournal.ts"
import { SqlClient } from "effect/sql"
import * as PgAccounts from "../../src/adapters/store/PgAccounts.ts"
import * as PgReplay from "../../src/adapters/store/PgReplay.ts"
import { Accounts } from "../../src/app/Accounts.ts"
import { defaultLedgerOptions, Ledger, type LedgerOptions } from "../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../src/adapters/store/PgLedgerWriter.ts"
import { SettlementJournal } from "../../src/app/SettlementJournal.ts"
import { Replay } from "../../src/app/Replay.ts"
import { holdInput } from "../support/Holds.ts"
import { usd } from "../support/Money.ts"
import { availableStores } from "../support/TestDatabase.ts"

const instance = (options: Partial<LedgerOptions> = {}) =>
  PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000, ...options })

/** A new account holding `amount` on `ledger`. */
const funded = (ledger: Ledger["Service"], name: string, amount: string) =>
  Effect.tap(ledger.openAccount(name), (account) => ledger.deposit(account.id, usd(amount), `${name}-funds`))

for (const { target, storeLayer } of availableStores("Ledger")) {
  const services = Layer.mergeAll(instance(), PgAccounts.layer, PgReplay.layer).pipe(Layer.provideMerge(storeLayer))

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
          yield* Layer.build(PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 })),
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

    it.effect(
      "a hold in use by a live request is never swept; once its request is gone it is released exactly once",
      () =>
        Effect.gen(function* () {
          const ledger = yield* Ledger
          const accounts = yield* Accounts
          const account = yield* funded(ledger, "expiry", "5")
          // Placed by this instance and never resolved: its request is, as far as this instance knows, still running.
          const { holdId } = yield* ledger.placeHold({ ...holdInput(account.id, "4"), ttlSeconds: 0 })
          assert.strictEqual(yield* ledger.sweepExpiredHolds, 0)
          assert.strictEqual((yield* accounts.get(account.id)).held, usd("4"))
          // Another instance (this one's requests are not its own) finds no lease and the expiry past: the request is
          // gone as far as the database can tell.
          const other = Context.get(yield* Layer.build(instance()), Ledger)
          const released = yield* Effect.forEach([1, 2, 3], () => other.sweepExpiredHolds, { concurrency: "unbounded" })
          assert.strictEqual(
            released.reduce((a, b) => a + b, 0),
            1
          )
          const view = yield* accounts.get(account.id)
          assert.strictEqual(view.held, 0n)
          assert.strictEqual(view.deposited - view.captured - view.held, usd("5"))
          const refunds = (yield* accounts.ledger(account.id, 0n, 100)).filter((e) => e.type === "RefundIssued")
          assert.deepStrictEqual(
            refunds.map((e) => (e.data as { holdId: string }).holdId),
            [holdId]
          )
        }).pipe(Effect.scoped)
    )

    it.effect(
      "a long call's lease carries its progress; when its process dies the hold is settled at that progress",
      () =>
        Effect.gen(function* () {
          const accounts = yield* Accounts
          const sql = yield* SqlClient.SqlClient
          const dying = yield* Scope.make()
          const first = Context.get(yield* Layer.buildWithScope(instance({ renewIntervalMillis: 40 }), dying), Ledger)
          const other = Context.get(yield* Layer.build(instance({ renewIntervalMillis: 40 })), Ledger)
          const account = yield* funded(first, "progress", "10")
          const { holdId } = yield* first.placeHold(holdInput(account.id, "3"))
          let delivered = 10
          first.reportProgress(holdId, () => ({
            cost: usd("0.001") * BigInt(delivered),
            usage: { outputTokens: delivered }
          }))
          yield* Effect.sleep("150 millis")
          delivered = 25
          yield* Effect.sleep("150 millis")
          const lease = yield* sql<{
            cost: string
          }>`SELECT cost::text AS cost FROM hold_leases WHERE hold_id = ${holdId}`
          assert.strictEqual(lease[0]?.cost, "25000")
          // Renewed: another instance leaves it alone, although the hold is past nothing and the lease is fresh.
          assert.strictEqual(yield* other.sweepExpiredHolds, 0)
          // The process dies (its fibers stop; nothing is resolved on the way out) and the lease lapses.
          yield* Scope.close(dying, Exit.void)
          yield* Effect.sleep("250 millis")
          assert.strictEqual(yield* other.sweepExpiredHolds, 1)
          const entries = yield* accounts.ledger(account.id, 0n, 100)
          const usage = entries.find((e) => e.type === "UsageRecalculated")
          assert.strictEqual((usage?.data as { captured: string } | undefined)?.captured, "0.025000")
          const view = yield* accounts.get(account.id)
          assert.strictEqual(view.captured, usd("0.025"))
          assert.strictEqual(view.held, 0n)
          const events = yield* sql<{ data: { usage: Record<string, unknown> } }>`
          SELECT data FROM events WHERE event_type = 'UsageRecalculated' AND data->>'holdId' = ${holdId}`
          assert.deepStrictEqual(events[0]?.data.usage, { outputTokens: 25, estimated: true, recovered: true })
          assert.strictEqual((yield* sql`SELECT 1 FROM hold_leases WHERE hold_id = ${holdId}`).length, 0)
          const report = yield* (yield* Replay).verify
          assert.isTrue(report.ok)
        }).pipe(Effect.scoped)
    )

    it.effect(
      "a settlement the database refuses for its usage is retried without it: the delivered call is billed",
      () =>
        Effect.gen(function* () {
          const ledger = yield* Ledger
          const accounts = yield* Accounts
          const account = yield* funded(ledger, "refused-usage", "10")
          const { holdId } = yield* ledger.placeHold(holdInput(account.id, "2"))
          // A NUL in the usage: jsonb refuses it. The cost is still owed.
          yield* ledger.settleDelivered(account.id, holdId, usd("1.25"), { note: "bad\u0000text" })
          for (let i = 0; i < 50 && ledger.liveStats().pendingResolutions > 0; i++) yield* Effect.sleep("50 millis")
          assert.strictEqual(ledger.liveStats().pendingResolutions, 0)
          const view = yield* accounts.get(account.id)
          assert.strictEqual(view.captured, usd("1.25"))
          assert.strictEqual(view.held, 0n)
        })
    )

    it.effect("a settlement journaled by a process that could not commit it is committed by the next one", () =>
      Effect.gen(function* () {
        const accounts = yield* Accounts
        const directory = mkdtempSync(join(tmpdir(), "tollgate-journal-"))
        yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(directory, { recursive: true, force: true })))
        const dying = yield* Scope.make()
        const first = Context.get(yield* Layer.buildWithScope(instance(), dying), Ledger)
        const account = yield* funded(first, "journaled", "10")
        const { holdId } = yield* first.placeHold(holdInput(account.id, "3"))
        // What the first process wrote before dying with the database away: the settlement, decided, not committed.
        yield* Effect.gen(function* () {
          const journal = yield* SettlementJournal
          yield* journal.record({
            holdId,
            accountId: account.id,
            resolution: { kind: "settle", cost: usd("2.5"), usage: { outputTokens: 99 } },
            decidedAt: new Date().toISOString()
          })
        }).pipe(Effect.provide(FileSettlementJournal.layer(directory)), Effect.scoped)
        yield* Scope.close(dying, Exit.void)
        const next = Context.get(
          yield* Layer.build(instance().pipe(Layer.provide(FileSettlementJournal.layer(directory)))),
          Ledger
        )
        for (let i = 0; i < 50 && next.liveStats().pendingResolutions > 0; i++) yield* Effect.sleep("50 millis")
        const view = yield* accounts.get(account.id)
        assert.strictEqual(view.captured, usd("2.5"))
        assert.strictEqual(view.held, 0n)
        // Done: the journal no longer holds it, so a third process has nothing to do.
        assert.strictEqual(readFileSync(join(directory, JOURNAL_FILE), "utf8").includes(holdId), true)
        const pending = yield* Effect.gen(function* () {
          return yield* (yield* SettlementJournal).pending
        }).pipe(Effect.provide(FileSettlementJournal.layer(directory)), Effect.scoped)
        assert.deepStrictEqual(pending, [])
      }).pipe(Effect.scoped)
    )

    it.effect("one poisoned command among 255 of other accounts in the writer's batch fails alone", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        const opened = yield* Effect.forEach(
          Array.from({ length: 256 }, (_, i) => i),
          (i) => ledger.openAccount(`batch-${i}`),
          { concurrency: "unbounded" }
        )
        const before = ledger.writerStats()
        const exits = yield* Effect.forEach(
          opened,
          (account, i) =>
            Effect.exit(ledger.deposit(account.id, usd("2"), i === 200 ? "poisoned\u0000reference" : `good-${i}`)),
          { concurrency: "unbounded" }
        )
        const failed = exits.flatMap((exit, i) => (Exit.isFailure(exit) ? [i] : []))
        assert.deepStrictEqual(failed, [200])
        const poisoned = exits[200]
        if (poisoned !== undefined && Exit.isFailure(poisoned)) {
          const error = Exit.findErrorOption(poisoned)
          assert.strictEqual(error._tag === "Some" ? error.value._tag : undefined, "StoreRefused")
        }
        // They shared batches with the poisoned one, and those batches were split rather than failed.
        assert.isTrue(ledger.writerStats().isolations > before.isolations)
        for (const [i, account] of opened.entries()) {
          assert.strictEqual((yield* accounts.get(account.id)).deposited, i === 200 ? 0n : usd("2"))
        }
      })
    )
  })
}
