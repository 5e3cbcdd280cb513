/**
 * The writer's order, for any mix of commands: holds that linger (until their follower or with the next batch), holds
 * committed at once, settlements, releases and deposits over a few accounts sharing one shard. Whatever waits and
 * whatever goes ahead, each account's events are in the order its commands were submitted, every lingering hold is
 * written exactly once, and the projections replay to what was written.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import fc from "fast-check"
import * as PgAccounts from "../../../src/adapters/store/PgAccounts.ts"
import * as PgLedgerWriter from "../../../src/adapters/store/PgLedgerWriter.ts"
import * as PgReplay from "../../../src/adapters/store/PgReplay.ts"
import { Accounts } from "../../../src/app/Accounts.ts"
import { defaultLedgerOptions, Ledger } from "../../../src/app/Ledger.ts"
import type { LingerUntil } from "../../../src/app/ports/LedgerWriter.ts"
import { Replay } from "../../../src/app/Replay.ts"
import { holdInput } from "../../support/Holds.ts"
import { usd } from "../../support/Money.ts"
import { availableStores } from "../../support/TestDatabase.ts"

const ACCOUNTS = 3

type Step =
  | { readonly kind: "linger"; readonly account: number; readonly until: LingerUntil }
  | { readonly kind: "hold"; readonly account: number }
  | { readonly kind: "settle" | "release"; readonly pick: number }
  | { readonly kind: "deposit"; readonly account: number }

const account = fc.integer({ min: 0, max: ACCOUNTS - 1 })
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("linger" as const),
    account,
    until: fc.constantFrom<LingerUntil>("follower", "next-batch")
  }),
  fc.record({ kind: fc.constant("hold" as const), account }),
  fc.record({ kind: fc.constantFrom("settle" as const, "release" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("deposit" as const), account })
)

/** A hold the script placed and has not ended yet: how to end it. */
interface Open {
  readonly settle: Effect.Effect<void, unknown>
  readonly release: Effect.Effect<void, unknown>
}

const cost = { amount: usd("0.25"), usage: { inputTokens: 1, outputTokens: 1 } }

/** A hold placed lingering (`until`), ended through its pending handle. */
const lingering = (accountId: string, requestId: string, until: LingerUntil) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const pending = yield* ledger.placeHoldLingering(holdInput(accountId, "1", requestId), undefined, until)
    return {
      settle: pending.settleDelivered(cost.amount, cost.usage),
      release: pending.abandon("failed")
    } satisfies Open
  })

/** A hold committed before its call, ended through the ledger. */
const committed = (accountId: string, requestId: string) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const { holdId } = yield* ledger.placeHold(holdInput(accountId, "1", requestId))
    return {
      settle: ledger.settle(accountId, holdId, cost.amount, cost.usage),
      release: ledger.release(accountId, holdId, "failed")
    } satisfies Open
  })

/** Runs the script; answers, per account, the request ids of its holds in the order they were submitted. */
const run = (steps: ReadonlyArray<Step>, round: number) =>
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const accountIds: Array<string> = []
    for (let i = 0; i < ACCOUNTS; i++) {
      const opened = yield* ledger.openAccount(`writer-order-${round}-${i}`)
      yield* ledger.deposit(opened.id, usd("1000"), `writer-order-${round}-${i}-funds`)
      accountIds.push(opened.id)
    }
    const submitted = new Map<string, Array<string>>(accountIds.map((id) => [id, []]))
    const open: Array<Open> = []
    let n = 0
    for (const s of steps) {
      n += 1
      switch (s.kind) {
        case "settle":
        case "release": {
          if (open.length === 0) break
          const [ending] = open.splice(s.pick % open.length, 1) as [Open]
          yield* s.kind === "settle" ? ending.settle : ending.release
          break
        }
        case "deposit":
          yield* ledger.deposit(accountIds[s.account] as string, usd("1"), `writer-order-${round}-deposit-${n}`)
          break
        case "linger":
        case "hold": {
          const accountId = accountIds[s.account] as string
          const requestId = `writer-order-${round}-${n}`
          ;(submitted.get(accountId) as Array<string>).push(requestId)
          open.push(
            s.kind === "linger"
              ? yield* lingering(accountId, requestId, s.until)
              : yield* committed(accountId, requestId)
          )
        }
      }
    }
    for (const ending of open) yield* ending.settle
    return { accountIds, submitted }
  })

/** The request ids of the account's `HoldPlaced` events, in stream order. */
const placedIn = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ request_id: string }>`
      SELECT data->>'requestId' AS request_id FROM events
      WHERE stream_name = ${`account-${accountId}`} AND event_type = 'HoldPlaced' ORDER BY stream_position`
    return rows.map((r) => r.request_id)
  })

for (const { target, storeLayer } of availableStores("PgLedgerWriter")) {
  // One shard, so that every account's commands meet in one writer; a linger long enough never to run out here.
  const services = Layer.mergeAll(
    PgLedgerWriter.layerWith({
      ...defaultLedgerOptions,
      shards: 1,
      maxBatch: 4,
      holdLingerMillis: 60_000,
      sweepIntervalMillis: 3_600_000
    }),
    PgAccounts.layer,
    PgReplay.layer
  ).pipe(Layer.provideMerge(storeLayer))

  layer(services, { timeout: "120 seconds", excludeTestServices: true })(
    `the ledger writer on ${target.name}`,
    (it) => {
      it.effect("each account's holds are written once, in the order they were submitted, whatever waits", () =>
        Effect.gen(function* () {
          const context = yield* Effect.context<Ledger | Accounts | Replay | SqlClient.SqlClient>()
          let round = 0
          yield* Effect.promise(() =>
            fc.assert(
              fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 24 }), (steps) =>
                Effect.runPromise(
                  Effect.gen(function* () {
                    round += 1
                    const { accountIds, submitted } = yield* run(steps, round)
                    for (const accountId of accountIds) {
                      assert.deepStrictEqual(yield* placedIn(accountId), submitted.get(accountId))
                      const view = yield* (yield* Accounts).get(accountId)
                      assert.strictEqual(view.held, 0n, "every hold resolved")
                    }
                  }).pipe(Effect.provide(context))
                )
              ),
              { numRuns: target.name === "pglite" ? 15 : 30 }
            )
          )
          const report = yield* (yield* Replay).verify
          assert.deepStrictEqual(report.mismatches, [])
        })
      )
    }
  )
}
