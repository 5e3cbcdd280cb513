import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as PgStatements from "../../../src/adapters/store/PgStatements.ts"
import { defaultLedgerOptions, Ledger } from "../../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../../src/adapters/store/PgLedgerWriter.ts"
import { addBalances, type Balances, balancesOf, collectStatement, Statements } from "../../../src/app/Statements.ts"
import { usd } from "../../support/Money.ts"
import { availableStores } from "../../support/TestDatabase.ts"

const zero: Balances = { balance: 0n, held: 0n, available: 0n }
const position = (p: bigint) => ({ _tag: "Position", position: p }) as const

for (const { target, storeLayer } of availableStores("PgStatements")) {
  const services = Layer.mergeAll(
    PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 }),
    PgStatements.layer
  ).pipe(Layer.provideMerge(storeLayer))

  layer(services, { timeout: "120 seconds", excludeTestServices: true })(`PgStatements on ${target.name}`, (it) => {
    /** An account with a deposit, a settled hold (refund), an overcharged hold, a released hold and a pending one. */
    const history = Effect.gen(function* () {
      const ledger = yield* Ledger
      const account = yield* ledger.openAccount("statement")
      yield* ledger.deposit(account.id, usd("10"), "d1")
      const hold = (amount: string, model: string) =>
        ledger.placeHold({
          accountId: account.id,
          amount: usd(amount),
          keyId: null,
          keySpendLimit: null,
          model,
          plugin: "text",
          requestId: `req-${model}`
        })
      const h1 = yield* hold("1", "m1")
      yield* ledger.settle(account.id, h1.holdId, usd("0.25"), { tokens: 10 })
      const h2 = yield* hold("0.5", "m2")
      yield* ledger.settle(account.id, h2.holdId, usd("0.75"), { tokens: 30 })
      const h3 = yield* hold("2", "m3")
      yield* ledger.release(account.id, h3.holdId, "failed")
      yield* hold("3", "m4")
      return account.id
    })

    const positions = (accountId: string) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ global_position: bigint; recorded_at: Date }>`
          SELECT global_position, recorded_at FROM events WHERE stream_name = ${`account-${accountId}`}
          ORDER BY stream_position`
      })

    it.effect("the whole history: opening is zero, closing is the live balance, entries carry the hold's model", () =>
      Effect.gen(function* () {
        const accountId = yield* history
        const statements = yield* Statements
        const statement = yield* statements.open(accountId, { from: null, to: null })
        const { entries, closing } = yield* collectStatement(statement)
        assert.deepStrictEqual(balancesOf(statement.opening), zero)
        assert.deepStrictEqual(
          entries.map((e) => e.type),
          [
            "AccountOpened",
            "FundsDeposited",
            "HoldPlaced",
            "UsageRecalculated",
            "RefundIssued",
            "HoldPlaced",
            "UsageRecalculated",
            "OverageCharged",
            "HoldPlaced",
            "RefundIssued",
            "HoldPlaced"
          ]
        )
        // 10 − 0.25 − 0.75 = 9; 3 held by the pending hold.
        assert.deepStrictEqual(balancesOf(closing), { balance: usd("9"), held: usd("3"), available: usd("6") })
        assert.deepStrictEqual(
          entries.map((e) => e.model),
          [null, null, "m1", "m1", "m1", "m2", "m2", "m2", "m3", "m3", "m4"]
        )
        assert.strictEqual(entries[3].requestId, "req-m1")
        assert.deepStrictEqual(entries[6].usage, { tokens: 30 })
        assert.deepStrictEqual(closing.holds.size, 1)
      })
    )

    it.effect("every split by position: opening + Σ delta = closing; `to` position inclusive, asOf inclusive", () =>
      Effect.gen(function* () {
        const accountId = yield* history
        const statements = yield* Statements
        const rows = yield* positions(accountId)
        for (let i = 0; i < rows.length; i++) {
          for (let j = i; j < rows.length; j++) {
            const statement = yield* statements.open(accountId, {
              from: position(rows[i].global_position),
              to: position(rows[j].global_position)
            })
            const { entries, closing } = yield* collectStatement(statement)
            assert.strictEqual(entries.length, j - i + 1)
            const sum = entries.map((e) => e.delta).reduce(addBalances, zero)
            assert.deepStrictEqual(addBalances(balancesOf(statement.opening), sum), balancesOf(closing))
            const asOf = yield* statements.asOf(accountId, position(rows[j].global_position))
            assert.deepStrictEqual(balancesOf(asOf), balancesOf(closing))
          }
        }
      })
    )

    it.effect("instants: `to` is exclusive, asOf inclusive; before the account existed → AccountNotFound", () =>
      Effect.gen(function* () {
        const accountId = yield* history
        const statements = yield* Statements
        const rows = yield* positions(accountId)
        const deposit = rows[1].recorded_at.toISOString()
        const upToDeposit = yield* collectStatement(
          yield* statements.open(accountId, { from: null, to: { _tag: "Instant", at: deposit } })
        )
        assert.isTrue(upToDeposit.entries.every((e) => e.at < deposit))
        const asOf = yield* statements.asOf(accountId, { _tag: "Instant", at: deposit })
        assert.isTrue(asOf.deposited >= usd("10"))
        const before = yield* Effect.exit(
          statements.asOf(accountId, { _tag: "Instant", at: "2000-01-01T00:00:00.000Z" })
        )
        assert.isTrue(Exit.isFailure(before))
        const unknown = yield* Effect.exit(
          statements.open("00000000-0000-4000-8000-000000000000", { from: null, to: null })
        )
        assert.isTrue(Exit.isFailure(unknown))
        const future = yield* collectStatement(
          yield* statements.open(accountId, { from: { _tag: "Instant", at: "2999-01-01T00:00:00.000Z" }, to: null })
        )
        assert.strictEqual(future.entries.length, 0)
        assert.strictEqual(balancesOf(future.closing).balance, usd("9"))
      })
    )

    it.effect("a long stream reads in pages with a bounded fold (2,500 events)", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const account = yield* ledger.openAccount("long")
        yield* Effect.forEach(
          Array.from({ length: 1_250 }, (_, i) => i),
          (i) => ledger.deposit(account.id, usd("0.01"), `d${i}`),
          { concurrency: 32 }
        )
        yield* Effect.forEach(
          Array.from({ length: 400 }),
          () =>
            Effect.flatMap(
              ledger.placeHold({
                accountId: account.id,
                amount: usd("0.01"),
                keyId: null,
                keySpendLimit: null,
                model: "m",
                plugin: "text",
                requestId: null
              }),
              (hold) => ledger.settle(account.id, hold.holdId, usd("0.004"), {})
            ),
          { concurrency: 32 }
        )
        const statements = yield* Statements
        const statement = yield* statements.open(account.id, { from: null, to: null })
        let largest = 0
        const count = yield* statement.lines.pipe(
          Stream.runFold(
            () => 0,
            (n, line) => {
              largest = Math.max(largest, line.state.holds.size)
              return n + 1
            }
          )
        )
        assert.strictEqual(count, 1 + 1_250 + 400 * 3)
        assert.isAtMost(largest, 40)
      })
    )
  })
}
