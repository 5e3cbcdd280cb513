/**
 * `/v1/usage/requests` pages through the `holds` projection newest first. Requests placed in the same instant (a
 * busy account places many a millisecond) must each be listed exactly once whatever the page size: the cursor is the
 * placement instant to the microsecond and the hold id.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as PgLedgerWriter from "../../../src/adapters/store/PgLedgerWriter.ts"
import * as PgUsage from "../../../src/adapters/store/PgUsage.ts"
import { defaultLedgerOptions, Ledger } from "../../../src/app/Ledger.ts"
import {
  type ChargeCursor,
  decodeChargeCursor,
  encodeChargeCursor,
  UsageReports
} from "../../../src/app/UsageReports.ts"
import { usd } from "../../support/Money.ts"
import { availableStores } from "../../support/TestDatabase.ts"

/** Placement instants shared by several holds, two of them apart by less than a millisecond. */
const INSTANTS = [
  "2026-11-25T10:00:00.000000Z",
  "2026-11-25T10:00:00.000000Z",
  "2026-11-25T10:00:00.000000Z",
  "2026-11-25T10:00:00.000400Z",
  "2026-11-25T10:00:00.000400Z",
  "2026-11-25T10:00:00.000700Z",
  "2026-11-25T10:00:01.000000Z",
  "2026-11-25T10:00:01.000000Z",
  "2026-11-25T10:00:01.000000Z",
  "2026-11-25T10:00:01.000000Z",
  "2026-11-25T10:00:02.500000Z"
]

for (const { target, storeLayer } of availableStores("PgUsage")) {
  const services = Layer.mergeAll(
    PgLedgerWriter.layerWith({ ...defaultLedgerOptions, sweepIntervalMillis: 3_600_000 }),
    PgUsage.layer
  ).pipe(Layer.provideMerge(storeLayer))

  layer(services, { timeout: "120 seconds", excludeTestServices: true })(`PgUsage on ${target.name}`, (it) => {
    it.effect("pages list every request once, in order, whatever the page size, when requests share instants", () =>
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const sql = yield* SqlClient.SqlClient
        const account = yield* ledger.openAccount("paging")
        yield* ledger.deposit(account.id, usd("100"), "d1")
        for (const [index, instant] of INSTANTS.entries()) {
          const hold = yield* ledger.placeHold({
            accountId: account.id,
            amount: usd("0.01"),
            keyId: null,
            keySpendLimit: null,
            model: "m",
            plugin: "text",
            requestId: `req-${index}`
          })
          yield* ledger.settle(account.id, hold.holdId, usd("0.01"), { tokens: 1 })
          yield* sql`UPDATE holds SET placed_at = ${instant}::timestamptz WHERE hold_id = ${hold.holdId}::uuid`
        }
        const reports = yield* UsageReports
        const everything = yield* reports.requests({ accountId: account.id, limit: 1000 })
        assert.strictEqual(everything.length, INSTANTS.length)
        const listedAll = everything.map((charge) => charge.requestId)
        for (let limit = 1; limit <= INSTANTS.length; limit++) {
          const listed: Array<string | null> = []
          let after: ChargeCursor | undefined
          for (let round = 0; round <= INSTANTS.length; round++) {
            const page = yield* reports.requests({ accountId: account.id, after, limit })
            listed.push(...page.map((charge) => charge.requestId))
            const last = page.at(-1)
            if (page.length < limit || last === undefined) break
            // The cursor goes to the client and back as text.
            after = decodeChargeCursor(encodeChargeCursor(last.cursor))
          }
          assert.deepStrictEqual(listed, listedAll, `limit ${limit}`)
        }
        for (let index = 1; index < everything.length; index++) {
          assert.isTrue(everything[index - 1].cursor.placedAt >= everything[index].cursor.placedAt)
        }
      })
    )
  })
}
