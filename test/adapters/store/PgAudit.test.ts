/**
 * Tamper evidence on both stores: an intact history verifies and records a checkpoint; a row edited directly in SQL,
 * a deleted event, a deleted tail, and an edit whose author also recomputed the stream's hashes are each reported at
 * the right place; events written before hashing existed are sealed at start.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as PgAudit from "../../../src/adapters/store/PgAudit.ts"
import { eventHash } from "../../../src/adapters/store/EventHash.ts"
import * as PgEventStore from "../../../src/adapters/store/PgEventStore.ts"
import { Audit } from "../../../src/app/Audit.ts"
import { EventStore } from "../../../src/app/EventStore.ts"
import { defaultLedgerOptions, Ledger } from "../../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../../src/adapters/store/PgLedgerWriter.ts"
import { usd } from "../../support/Money.ts"
import { availableStores } from "../../support/TestDatabase.ts"

/** Some history: two accounts with deposits, holds, settlements, and a stream written through the EventStore. */
const activity = Effect.gen(function* () {
  const ledger = yield* Ledger
  const store = yield* EventStore
  const ids: Array<string> = []
  for (const name of ["a", "b"]) {
    const account = yield* ledger.openAccount(name)
    ids.push(account.id)
    yield* ledger.deposit(account.id, usd("10"), `seed-${name}`)
    for (let i = 0; i < 3; i++) {
      const { holdId } = yield* ledger.placeHold({
        accountId: account.id,
        amount: usd("1"),
        keyId: null,
        keySpendLimit: null,
        model: "m",
        plugin: "text",
        requestId: `r-${i}`
      })
      yield* ledger.settle(account.id, holdId, usd("0.25"), { inputTokens: 3, outputTokens: 4 })
    }
  }
  yield* store.append(
    "note-1",
    "any",
    [{ eventId: crypto.randomUUID(), type: "Noted", data: { n: 1.5, s: "é" } }],
    new Date()
  )
  return ids
})

interface Row {
  global_position: string
  stream_name: string
  stream_position: string
}

const eventOf = (stream: string, position: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<Row>`SELECT global_position::text, stream_name, stream_position::text FROM events
      WHERE stream_name = ${stream} AND stream_position = ${position}`
    return row
  })

/**
 * Waits until no transaction that began before the newest event's is still running anywhere in the cluster (on
 * Postgres, another test's transaction in another database counts too). Checkpoints stop short of such a
 * transaction by design (PgAudit.ts), so only then must the newest checkpoint cover every event.
 */
const olderTransactionsEnded = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (let tries = 0; ; tries++) {
    const [row] = yield* sql<{ ended: boolean }>`SELECT coalesce(pg_snapshot_xmin(pg_current_snapshot()) >
      (SELECT max(transaction_id) FROM events), true) AS ended`
    if (row.ended) return
    if (tries >= 1_000) return yield* Effect.die(new Error("an older transaction stayed open for 20 s"))
    yield* Effect.sleep("20 millis")
  }
})

for (const { target, storeLayer } of availableStores("audit")) {
  const services = Layer.mergeAll(
    PgLedgerWriter.layerWith({ ...defaultLedgerOptions, shards: 1, sweepIntervalMillis: 3_600_000 }),
    PgEventStore.layer,
    PgAudit.layer
  ).pipe(Layer.provideMerge(storeLayer))

  layer(services, { timeout: "60 seconds", excludeTestServices: true })(`audit on ${target.name}`, (it) => {
    it.effect("detects direct SQL edits, deletions and a rewritten chain; seals unhashed history", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const audit = yield* Audit
        const [a, b] = yield* activity
        const total = Number((yield* sql<{ n: string }>`SELECT count(*)::text AS n FROM events`)[0].n)
        yield* olderTransactionsEnded

        const clean = yield* audit.verify
        assert.isTrue(clean.ok, JSON.stringify(clean.firstBroken))
        assert.strictEqual(clean.checked, total)
        assert.isNotNull(clean.checkpoints.latest)
        assert.strictEqual(clean.checkpoints.latest?.events, String(total))

        // 1. An amount edited in place.
        const target = yield* eventOf(`account-${a}`, 4)
        yield* sql`UPDATE events SET data = jsonb_set(data, '{amount}', '"0.010000"')
          WHERE global_position = ${target.global_position}::bigint`
        const edited = yield* audit.verify
        assert.isFalse(edited.ok)
        assert.deepStrictEqual(edited.firstBroken, {
          stream: `account-${a}`,
          position: "4",
          globalPosition: target.global_position,
          reason: "hash_mismatch"
        })
        assert.isNull(edited.checkpoints.latest)

        // 2. The same edit with the stream's hashes recomputed after it (an author who knows the scheme): the stream
        // chains agree again, but the global chain no longer passes through the recorded checkpoint.
        const rows = yield* sql<{
          global_position: string
          stream_name: string
          stream_position: string
          event_id: string
          event_type: string
          schema_version: number
          data: unknown
          metadata: unknown
          recorded_at: Date
        }>`SELECT global_position::text, stream_name, stream_position::text, event_id, event_type, schema_version, data,
             metadata, recorded_at FROM events e WHERE stream_name = ${`account-${a}`} ORDER BY e.stream_position`
        let previous: string | null = null
        for (const row of rows) {
          previous = eventHash(previous, {
            stream: row.stream_name,
            position: row.stream_position,
            eventId: row.event_id,
            type: row.event_type,
            schemaVersion: row.schema_version,
            data: row.data,
            metadata: row.metadata,
            recordedAt: row.recorded_at.toISOString()
          })
          yield* sql`UPDATE events SET hash = decode(${previous}, 'hex') WHERE global_position = ${row.global_position}::bigint`
        }
        yield* sql`UPDATE streams SET head_hash = decode(${previous}, 'hex') WHERE stream_name = ${`account-${a}`}`
        const rewritten = yield* audit.verify
        assert.isFalse(rewritten.ok)
        assert.strictEqual(rewritten.firstBroken?.stream, "$global", JSON.stringify(rewritten.firstBroken))
        assert.strictEqual(rewritten.firstBroken?.reason, "checkpoint_mismatch")

        // 3. An event deleted from the middle of another stream.
        const middle = yield* eventOf(`account-${b}`, 3)
        yield* sql`DELETE FROM events WHERE global_position = ${middle.global_position}::bigint`
        const deleted = yield* audit.verify
        assert.isFalse(deleted.ok)
        // 4. The tail of the note stream deleted, its head left alone.
        yield* sql`DELETE FROM events WHERE stream_name = 'note-1'`
        yield* sql`INSERT INTO streams (stream_name, version) VALUES ('note-2', 0) ON CONFLICT DO NOTHING`
        const note = yield* audit.verify
        assert.isFalse(note.ok)
      })
    )

    it.effect("seals events written before hashing existed, then verifies clean", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const audit = yield* Audit
        yield* sql`DELETE FROM audit_checkpoints`
        yield* sql`DELETE FROM events`
        yield* sql`DELETE FROM streams`
        yield* activity
        // As an older version wrote them: no hashes anywhere.
        yield* sql`UPDATE events SET hash = NULL`
        yield* sql`UPDATE streams SET head_hash = NULL`
        const unsealed = yield* audit.verify
        assert.isFalse(unsealed.ok)
        const sealed = yield* PgAudit.sealUnhashedEvents(sql)
        assert.isAbove(sealed, 10)
        const report = yield* audit.verify
        assert.isTrue(report.ok, JSON.stringify(report.firstBroken))
        // New writes chain onto the sealed history.
        const [fresh] = yield* activity
        assert.isTrue((yield* audit.verify).ok)
        // A deleted middle event shows as a gap at the next position.
        const middle = yield* eventOf(`account-${fresh}`, 3)
        const next = yield* eventOf(`account-${fresh}`, 4)
        yield* sql`DELETE FROM events WHERE global_position = ${middle.global_position}::bigint`
        const gap = yield* audit.verify
        assert.deepStrictEqual(gap.firstBroken, {
          stream: `account-${fresh}`,
          position: "4",
          globalPosition: next.global_position,
          reason: "position_gap"
        })
      })
    )
  })
}

describe("EventHash", () => {
  layer(Layer.empty)((it) => {
    it("is stable under key order and sensitive to every field", () => {
      const base = {
        stream: "s",
        position: "1",
        eventId: "e",
        type: "T",
        schemaVersion: 1,
        data: { a: 1, b: "x" },
        metadata: {},
        recordedAt: "2026-01-01T00:00:00.000Z"
      }
      const h = eventHash(null, base)
      assert.strictEqual(eventHash(null, { ...base, data: { b: "x", a: 1 } }), h)
      assert.notStrictEqual(eventHash(null, { ...base, data: { a: 2, b: "x" } }), h)
      assert.notStrictEqual(eventHash(null, { ...base, position: "2" }), h)
      assert.notStrictEqual(eventHash(h, base), h)
    })
  })
})
