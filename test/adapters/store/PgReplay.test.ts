import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as PgAccounts from "../../../src/adapters/store/PgAccounts.ts"
import * as PgKeys from "../../../src/adapters/store/PgKeys.ts"
import * as PgReplay from "../../../src/adapters/store/PgReplay.ts"
import { outdatedProjections, upgradeProjections } from "../../../src/adapters/store/ProjectionVersions.ts"
import { LedgerCore, PROJECTION_VERSIONS, type ReplayEvent } from "../../../src/adapters/store/Projections.ts"
import { videoTaskFinished } from "../../../src/adapters/store/ProjectionTables.ts"
import { Accounts } from "../../../src/app/Accounts.ts"
import { Keys } from "../../../src/app/Keys.ts"
import { defaultLedgerOptions, Ledger } from "../../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../../src/adapters/store/PgLedgerWriter.ts"
import { Replay } from "../../../src/app/Replay.ts"
import { usd } from "../../support/Money.ts"
import type { VideoTaskState } from "../../../src/domain/video/VideoTask.ts"
import { availableStores } from "../../support/TestDatabase.ts"

describe("replay fold, in memory", () => {
  const at = "2026-11-22T10:00:00.000Z"
  const account = "00000000-0000-4000-8000-000000000001"
  const events = function* (holds: number): Generator<ReplayEvent> {
    let position = 0n
    const next = (type: string, data: Record<string, unknown>): ReplayEvent => {
      position += 1n
      return {
        streamName: `account-${account}`,
        streamPosition: position,
        type,
        data: { accountId: account, at, ...data }
      }
    }
    yield next("AccountOpened", { name: "a" })
    yield next("FundsDeposited", { amount: "1000.000000", reference: "r1" })
    for (let i = 0; i < holds; i++) {
      const holdId = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`
      yield next("HoldPlaced", {
        holdId,
        amount: "1.000000",
        keyId: null,
        model: "m",
        plugin: "text",
        requestId: null,
        expiresAt: null
      })
      yield next("UsageRecalculated", {
        holdId,
        cost: "0.400000",
        captured: "0.400000",
        usage: {},
        metrics: { inputTokens: 1, outputTokens: 1, images: 0, videoSeconds: 0 }
      })
      yield next("RefundIssued", { holdId, amount: "0.600000", reason: "unused" })
    }
  }

  it("keeps a resolved hold until its command is over, then forgets it: memory does not grow with history", () => {
    const core = new LedgerCore()
    let peak = 0
    let count = 0
    for (const event of events(20_000)) {
      const step = core.step(event)
      count += 1
      if (step?.event.type === "UsageRecalculated") {
        // The refund of the same settlement is still to come: the hold must stay reachable.
        assert.isFalse(core.isFinal(account, event.streamPosition))
      }
      if (count % 1_000 === 0) core.prune(false)
      peak = Math.max(peak, core.settlingHolds() + core.pendingHolds())
    }
    core.prune(true)
    assert.isAtMost(peak, 1_001)
    assert.strictEqual(core.settlingHolds(), 0)
    assert.strictEqual(core.pendingHolds(), 0)
    const state = core.accounts.get(account)?.state
    assert.strictEqual(state?.captured, usd("8000"))
    assert.strictEqual(state?.held, 0n)
    assert.strictEqual(state?.depositReferences.size, 0)
  })

  it("a refund after a flush still finds its settled hold", () => {
    const core = new LedgerCore()
    const all = [...events(1)]
    for (const event of all.slice(0, -1)) core.step(event)
    core.prune(false) // the settlement's refund has not been read yet: the hold must survive this
    const refund = core.step(all[all.length - 1])
    assert.strictEqual(refund?.hold?.status, "settled")
    assert.strictEqual(refund?.hold?.refunded, usd("0.6"))
  })

  it("a video task leaves memory once nothing more can happen to it", () => {
    const base = { status: "completed", content: { key: "k" }, contentExpiredAt: null } as unknown as VideoTaskState
    assert.isFalse(videoTaskFinished(base))
    assert.isTrue(videoTaskFinished({ ...base, contentExpiredAt: "2026-11-23T00:00:00.000Z" }))
    assert.isTrue(videoTaskFinished({ ...base, status: "failed" }))
    assert.isFalse(videoTaskFinished({ ...base, status: "in_progress" }))
  })

  it("outdated projections: a lower stored version, or a missing one on a database with events", () => {
    const code = { accounts: 1, holds: 2 }
    assert.deepStrictEqual(
      outdatedProjections(
        new Map([
          ["accounts", 1],
          ["holds", 1]
        ]),
        code,
        true
      ),
      ["holds"]
    )
    assert.deepStrictEqual(outdatedProjections(new Map(), code, false), [])
    assert.deepStrictEqual(outdatedProjections(new Map([["accounts", 1]]), code, true), ["holds"])
    assert.deepStrictEqual(
      outdatedProjections(
        new Map([
          ["accounts", 3],
          ["holds", 2]
        ]),
        code,
        true
      ),
      []
    )
  })
})

for (const { target, storeLayer } of availableStores("PgReplay")) {
  const services = Layer.mergeAll(
    PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 }),
    PgAccounts.layer,
    PgKeys.layer,
    PgReplay.layer
  ).pipe(Layer.provideMerge(storeLayer))

  const activity = (name: string) =>
    Effect.gen(function* () {
      const ledger = yield* Ledger
      const keys = yield* Keys
      const account = yield* ledger.openAccount(name)
      yield* ledger.deposit(account.id, usd("20"), `${name}-d1`)
      yield* ledger.deposit(account.id, usd("5"), `${name}-d2`)
      const key = yield* keys.create(account.id, { name: "k", models: null, expiresAt: null, spendLimit: usd("15") })
      const hold = (amount: string) =>
        ledger.placeHold({
          accountId: account.id,
          amount: usd(amount),
          keyId: key.id,
          keySpendLimit: usd("15"),
          model: "sim",
          plugin: "text",
          requestId: null
        })
      const under = yield* hold("2")
      yield* ledger.settle(account.id, under.holdId, usd("0.5"), { input_tokens: 3, output_tokens: 4 })
      const over = yield* hold("1")
      yield* ledger.settle(account.id, over.holdId, usd("1.5"), { input_tokens: 30, output_tokens: 40 })
      const failed = yield* hold("3")
      yield* ledger.release(account.id, failed.holdId, "failed")
      const pending = yield* hold("1")
      const revoked = yield* keys.create(account.id, { name: "old", models: ["m"], expiresAt: null, spendLimit: null })
      yield* keys.revoke(revoked.id)
      return { account, key, pending }
    })

  layer(services, { timeout: "120 seconds", excludeTestServices: true })(`PgReplay on ${target.name}`, (it) => {
    it.effect("verify is clean after mixed activity and counts every table", () =>
      Effect.gen(function* () {
        yield* activity("mixed")
        const report = yield* (yield* Replay).verify
        assert.deepStrictEqual(report.mismatches, [])
        assert.isTrue(report.ok)
        assert.isAtLeast(report.events, 10)
        assert.isAtLeast(report.tables.holds ?? 0, 4)
        assert.isAtLeast(report.tables.usage_daily ?? 0, 1)
        assert.isAtLeast(report.tables.api_keys ?? 0, 2)
        assert.isAtLeast(report.eventsPerSecond, 1)
        const sql = yield* SqlClient.SqlClient
        const scratch = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name LIKE 'replay_%'`
        assert.strictEqual(scratch[0].n, 0)
      })
    )

    it.effect("a tampered row is reported; apply repairs it while a writer keeps committing", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const ledger = yield* Ledger
        const accounts = yield* Accounts
        const replay = yield* Replay
        const { account, key, pending } = yield* activity("tampered")
        yield* sql`UPDATE accounts SET name = 'edited' WHERE id = ${account.id}`
        yield* sql`UPDATE holds SET captured = captured + 1 WHERE hold_id = ${pending.holdId}`
        yield* sql`INSERT INTO deposits (account_id, reference, amount, at) VALUES (${account.id}, 'ghost', 1, now())`
        yield* sql`UPDATE api_keys SET last_used_at = '2026-01-02T03:04:05Z' WHERE id = ${key.id}`
        const report = yield* replay.verify
        assert.isFalse(report.ok)
        const tables = new Set(report.mismatches.map((m) => m.table))
        assert.deepStrictEqual([...tables].sort(), ["accounts", "deposits", "holds"])

        // A concurrent writer: hold + settle in a loop on another account until told to stop.
        const busy = yield* ledger.openAccount("busy")
        yield* ledger.deposit(busy.id, usd("1000"), "busy-d")
        let stop = false
        let settled = 0
        const writer = yield* Effect.forkChild(
          Effect.gen(function* () {
            while (!stop) {
              const hold = yield* ledger.placeHold({
                accountId: busy.id,
                amount: usd("0.01"),
                keyId: null,
                keySpendLimit: null,
                model: "m",
                plugin: "text",
                requestId: null
              })
              yield* ledger.settle(busy.id, hold.holdId, usd("0.004"), {})
              settled += 1
            }
          })
        )
        yield* Effect.sleep("50 millis")
        const applied = yield* replay.apply()
        yield* Effect.sleep("50 millis")
        stop = true
        yield* Fiber.join(writer)
        assert.isTrue(applied.ok)
        assert.isAtLeast(applied.repaired.accounts?.written ?? 0, 1)
        assert.strictEqual(applied.repaired.deposits?.deleted, 1)
        assert.isAtLeast(applied.pauseMs, 0)
        assert.isAbove(settled, 0)

        const after = yield* replay.verify
        assert.deepStrictEqual(after.mismatches, [])
        // Nothing lost: every settlement the writer saw committed is in the balance.
        const view = yield* accounts.get(busy.id)
        assert.strictEqual(view.captured, usd("0.004") * BigInt(settled))
        assert.strictEqual(view.held, 0n)
        const [events] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM events WHERE stream_name = ${`account-${busy.id}`}`
        assert.strictEqual(events.n, 2 + settled * 3)
        const [operational] = yield* sql<{ last_used_at: Date | null }>`
          SELECT last_used_at FROM api_keys WHERE id = ${key.id}`
        assert.strictEqual(operational.last_used_at?.toISOString(), "2026-01-02T03:04:05.000Z")
      })
    )

    it.effect("a projection whose version goes up is rebuilt in place exactly once", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* activity("versions")
        // This database has events and no recorded versions: the first start rebuilds everything once.
        yield* upgradeProjections(PROJECTION_VERSIONS)
        assert.deepStrictEqual(yield* upgradeProjections(PROJECTION_VERSIONS), [])
        const [hold] = yield* sql<{ hold_id: string }>`SELECT hold_id FROM holds ORDER BY hold_id LIMIT 1`
        yield* sql`UPDATE holds SET model = 'stale' WHERE hold_id = ${hold.hold_id}`
        const bumped = { ...PROJECTION_VERSIONS, holds: (PROJECTION_VERSIONS.holds ?? 1) + 1 }
        assert.deepStrictEqual(yield* upgradeProjections(bumped), ["holds"])
        assert.deepStrictEqual(yield* upgradeProjections(bumped), [])
        const [repaired] = yield* sql<{ model: string }>`SELECT model FROM holds WHERE hold_id = ${hold.hold_id}`
        assert.notStrictEqual(repaired.model, "stale")
        const [stored] = yield* sql<{ version: number }>`SELECT version FROM projection_versions WHERE name = 'holds'`
        assert.strictEqual(stored.version, bumped.holds)
        assert.isTrue((yield* (yield* Replay).verify).ok)
      })
    )
  })
}
