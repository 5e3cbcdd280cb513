import { assert, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as PgAccounts from "../../src/adapters/store/PgAccounts.ts"
import * as PgLedgerWriter from "../../src/adapters/store/PgLedgerWriter.ts"
import * as PgReplay from "../../src/adapters/store/PgReplay.ts"
import { Accounts } from "../../src/app/Accounts.ts"
import { defaultLedgerOptions, Ledger, type LedgerOptions } from "../../src/app/Ledger.ts"
import { Replay } from "../../src/app/Replay.ts"
import { holdInput } from "../support/Holds.ts"
import { usd } from "../support/Money.ts"
import { availableStores } from "../support/TestDatabase.ts"

/** The event types of one account's stream, in order, after its opening and deposit. */
const eventsOf = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ type: string }>`
      SELECT event_type AS type FROM events WHERE stream_name = ${`account-${accountId}`} ORDER BY stream_position`
    return rows.map((r) => r.type).slice(2)
  })

const funded = (name: string, amount: string) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const account = yield* ledger.openAccount(name)
    yield* ledger.deposit(account.id, usd(amount), `${name}-funds`)
    return account.id
  })

/** What `effect` had the writer commit: its batches and commands. */
const writesOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const before = ledger.writerStats()
    yield* effect
    const after = ledger.writerStats()
    return { batches: after.batches - before.batches, commands: after.commands - before.commands }
  })

const verified = Effect.gen(function* () {
  const report = yield* (yield* Replay).verify
  assert.deepStrictEqual(report.mismatches, [])
})

/** A ledger with `options` (the periodic sweep off) on `storeLayer`, with the accounts and replay around it. */
const servicesWith = <E, R>(storeLayer: Layer.Layer<SqlClient.SqlClient, E, R>, options: Partial<LedgerOptions>) =>
  Layer.mergeAll(
    PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000, ...options }),
    PgAccounts.layer,
    PgReplay.layer
  ).pipe(Layer.provideMerge(storeLayer))

for (const { target, storeLayer } of availableStores("LingeringHold")) {
  // One shard, so that every account's commands share one writer; a linger long enough never to run out here unless
  // a test waits for it.
  const services = servicesWith(storeLayer, { shards: 1, holdLingerMillis: 300 })

  layer(services, { timeout: "60 seconds", excludeTestServices: true })(`lingering holds on ${target.name}`, (it) => {
    it.effect("a short call's hold and settlement commit in one batch, the hold decided first", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("short-call", "10")
        const writes = yield* writesOf(
          Effect.flatMap(ledger.placeHoldLingering(holdInput(accountId, "2", "req-short")), (pending) =>
            pending.settleDelivered(usd("0.5"), { inputTokens: 10, outputTokens: 5 })
          )
        )
        assert.strictEqual(writes.batches, 1)
        assert.strictEqual(writes.commands, 2)
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
        const view = yield* (yield* Accounts).get(accountId)
        assert.strictEqual(view.captured, usd("0.5"))
        assert.strictEqual(view.held, 0n)
        yield* verified
      })
    )

    it.effect("a call that fails leaves its hold and refund, written together", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("failed-call", "10")
        const writes = yield* writesOf(
          Effect.flatMap(ledger.placeHoldLingering(holdInput(accountId, "2", "req-failed")), (pending) =>
            pending.abandon("failed")
          )
        )
        assert.strictEqual(writes.batches, 1)
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "RefundIssued"])
        const view = yield* (yield* Accounts).get(accountId)
        assert.strictEqual(view.held, 0n)
        assert.strictEqual(view.captured, 0n)
        yield* verified
      })
    )

    it.effect("left alone, the hold is written once the linger time is up, then settled after it", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("slow-call", "10")
        const pending = yield* ledger.placeHoldLingering(holdInput(accountId, "2", "req-slow"))
        assert.deepStrictEqual(yield* eventsOf(accountId), [], "not written before the linger time")
        yield* Effect.sleep("600 millis")
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced"])
        assert.strictEqual((yield* (yield* Accounts).get(accountId)).held, usd("2"))
        yield* pending.committed
        yield* pending.settleDelivered(usd("1"), { inputTokens: 1, outputTokens: 1 })
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
        yield* verified
      })
    )

    it.effect("other accounts' commands leave the hold waiting for its settlement: both commit in one batch", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("quiet-account", "10")
        const otherId = yield* funded("busy-neighbour", "10")
        const pending = yield* ledger.placeHoldLingering(holdInput(accountId, "2", "req-quiet"))
        // The one shard commits the other account's hold and settlement meanwhile.
        const { holdId } = yield* ledger.placeHold(holdInput(otherId, "1", "req-neighbour"))
        yield* ledger.settle(otherId, holdId, usd("0.5"), { inputTokens: 1, outputTokens: 1 })
        assert.deepStrictEqual(yield* eventsOf(otherId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
        assert.deepStrictEqual(yield* eventsOf(accountId), [], "still waiting")
        const writes = yield* writesOf(pending.settleDelivered(usd("0.5"), { inputTokens: 10, outputTokens: 5 }))
        assert.strictEqual(writes.batches, 1)
        assert.strictEqual(writes.commands, 2)
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
        yield* verified
      })
    )

    it.effect("a stream's hold rides its shard's next batch, behind what was queued, whoever's it is", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("streaming", "10")
        const otherId = yield* funded("neighbour", "10")
        const pending = yield* ledger.placeHoldLingering(
          holdInput(accountId, "2", "req-stream"),
          undefined,
          "next-batch"
        )
        const writes = yield* writesOf(ledger.placeHold(holdInput(otherId, "1", "req-other")))
        assert.strictEqual(writes.batches, 1)
        assert.strictEqual(writes.commands, 2, "the other account's hold, and this one riding along")
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced"])
        yield* pending.committed
        yield* pending.settleDelivered(usd("1"), { inputTokens: 1, outputTokens: 1 })
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
        yield* verified
      })
    )

    it.effect("each hold waits its own linger time, not the one of a hold placed before it", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const earlyId = yield* funded("early-call", "10")
        const lateId = yield* funded("late-call", "10")
        const early = yield* ledger.placeHoldLingering(holdInput(earlyId, "1", "req-early"))
        yield* Effect.sleep("150 millis")
        const late = yield* ledger.placeHoldLingering(holdInput(lateId, "1", "req-late"))
        // Written when its 300 ms are up (polled), while the later hold still has ~150 ms to wait.
        while ((yield* eventsOf(earlyId)).length === 0) yield* Effect.sleep("10 millis")
        assert.deepStrictEqual(yield* eventsOf(lateId), [], "the later hold still waits")
        yield* late.committed
        assert.deepStrictEqual(yield* eventsOf(lateId), ["HoldPlaced"])
        yield* early.settleDelivered(usd("0.1"), { inputTokens: 1, outputTokens: 1 })
        yield* late.settleDelivered(usd("0.1"), { inputTokens: 1, outputTokens: 1 })
        yield* verified
      })
    )

    it.effect("at most one hold of an account lingers: its next hold sends the earlier one on", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("two-calls", "3")
        const first = yield* ledger.placeHoldLingering(holdInput(accountId, "2", "req-first"))
        let refused = 0
        const second = yield* ledger.placeHoldLingering(holdInput(accountId, "2", "req-second"), () => {
          refused += 1
        })
        // The first is decided without waiting for its settlement, so the second's refusal is known at once.
        yield* first.committed
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced"])
        const error = yield* Effect.flip(second.committed)
        assert.strictEqual(error._tag === "LedgerRejected" && error.reason, "InsufficientBalance")
        assert.strictEqual(refused, 1)
        yield* first.settleDelivered(usd("1"), { inputTokens: 1, outputTokens: 1 })
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
        yield* verified
      })
    )

    it.effect("the hold goes with the next command of its account, ahead of it", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("busy-shard", "3")
        const pending = yield* ledger.placeHoldLingering(holdInput(accountId, "2", "req-busy"))
        // The same account's next hold is decided after the lingering one: 1.00 is left, so 2.00 more is refused.
        const second = yield* Effect.flip(ledger.placeHold(holdInput(accountId, "2", "req-next")))
        assert.strictEqual(second._tag === "LedgerRejected" && second.reason, "InsufficientBalance")
        yield* pending.committed
        assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced"])
        yield* pending.settleDelivered(usd("2"), { inputTokens: 1, outputTokens: 1 })
        yield* verified
      })
    )

    it.effect("a hold refused when decided: its observer hears it, nothing is delivered or charged", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("poor", "1")
        let refused = 0
        const pending = yield* ledger.placeHoldLingering(holdInput(accountId, "5", "req-poor"), () => {
          refused += 1
        })
        const error = yield* Effect.flip(pending.settleDelivered(usd("0.1"), { inputTokens: 1, outputTokens: 1 }))
        assert.strictEqual(error._tag === "LedgerRejected" && error.reason, "InsufficientBalance")
        assert.strictEqual(refused, 1)
        assert.deepStrictEqual(yield* eventsOf(accountId), [])
        const view = yield* (yield* Accounts).get(accountId)
        assert.strictEqual(view.captured, 0n)
        assert.strictEqual(view.held, 0n)
        // Abandoning a refused hold writes nothing either.
        yield* pending.abandon("failed")
        assert.deepStrictEqual(yield* eventsOf(accountId), [])
        yield* verified
      })
    )
  })
}

for (const { target, storeLayer } of availableStores("LingeringHold expiry")) {
  // Holds expire after 1 s here, so that a call still running past its hold's expiry is quick to test.
  const services = servicesWith(storeLayer, { holdTtlSeconds: 1, holdLingerMillis: 50 })

  layer(services, { timeout: "60 seconds", excludeTestServices: true })(`lingering holds on ${target.name}`, (it) => {
    it.effect(
      "a hold written alone while its call runs is in use: past its expiry the sweep leaves it, and it bills",
      () =>
        Effect.gen(function* () {
          const ledger = yield* Ledger
          const accountId = yield* funded("long-call", "10")
          const pending = yield* ledger.placeHoldLingering(holdInput(accountId, "2", "req-long"))
          yield* Effect.sleep("1500 millis") // written after 50 ms, expired after 1 s
          assert.strictEqual(yield* ledger.sweepExpiredHolds, 0)
          yield* pending.settleDelivered(usd("0.25"), { inputTokens: 3, outputTokens: 4 })
          assert.deepStrictEqual(yield* eventsOf(accountId), ["HoldPlaced", "UsageRecalculated", "RefundIssued"])
          assert.strictEqual((yield* (yield* Accounts).get(accountId)).captured, usd("0.25"))
          assert.strictEqual(ledger.liveStats().liveHolds, 0)
          yield* verified
        })
    )
  })
}

for (const { target, storeLayer } of availableStores("LingeringHold batch size")) {
  const services = servicesWith(storeLayer, { shards: 1, maxBatch: 2, holdLingerMillis: 300 })

  layer(services, { timeout: "60 seconds", excludeTestServices: true })(`lingering holds on ${target.name}`, (it) => {
    it.effect("holds sent on by their account's next hold queue behind the deposit, maxBatch commands a batch", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const accountId = yield* funded("many-holds", "10")
        const before = ledger.writerStats()
        // The deposit is queued first; each hold sends the one before it on, behind the deposit, and the last lingers.
        const deposit = yield* Effect.forkChild(ledger.deposit(accountId, usd("1"), "more-funds"), {
          startImmediately: true
        })
        const holds = yield* Effect.forEach(["a", "b", "c"], (id) =>
          ledger.placeHoldLingering(holdInput(accountId, "1", `req-${id}`))
        )
        yield* Fiber.join(deposit)
        assert.strictEqual(ledger.writerStats().commands - before.commands, 2, "the deposit and hold a")
        yield* Effect.forEach(holds, (hold) => hold.committed)
        const after = ledger.writerStats()
        assert.strictEqual(after.commands - before.commands, 4)
        assert.strictEqual(after.batches - before.batches, 3, "[deposit, a], [b], then c when asked for")
        assert.strictEqual((yield* (yield* Accounts).get(accountId)).held, usd("3"))
        yield* verified
      })
    )

    it.effect("holds riding the next batch fill it up to maxBatch commands, the rest wait for the next", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const depositTo = yield* funded("riders-deposit", "10")
        const accounts = yield* Effect.forEach(["x", "y", "z"], (id) => funded(`rider-${id}`, "10"))
        const before = ledger.writerStats()
        const deposit = yield* Effect.forkChild(ledger.deposit(depositTo, usd("1"), "rider-funds"), {
          startImmediately: true
        })
        const holds = yield* Effect.forEach(accounts, (accountId, i) =>
          ledger.placeHoldLingering(holdInput(accountId, "1", `req-rider-${i}`), undefined, "next-batch")
        )
        yield* Fiber.join(deposit)
        assert.strictEqual(ledger.writerStats().commands - before.commands, 2, "the deposit and one rider")
        yield* Effect.forEach(holds, (hold) => hold.committed)
        assert.strictEqual(ledger.writerStats().commands - before.commands, 4)
        yield* verified
      })
    )
  })
}
