import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import {
  type BatchItem,
  type BatchOutcome,
  commitBatch,
  commitIsolated,
  KnownAccounts,
  refusedState,
  WriterStats
} from "../../../src/adapters/store/LedgerStore.ts"
import type { StoreRefused } from "../../../src/app/StoreErrors.ts"

type PlaceHoldCommand = Extract<LedgerCommand, { type: "PlaceHold" }>
import { accountStream } from "../../../src/domain/Ids.ts"
import { fold } from "../../../src/domain/ledger/LedgerAccount.ts"
import { initialState, type LedgerCommand } from "../../../src/domain/ledger/LedgerState.ts"
import type { LedgerEvent } from "../../../src/domain/ledger/LedgerEvent.ts"
import { usd } from "../../support/Money.ts"
import { availableStores } from "../../support/TestDatabase.ts"

const NOW = new Date("2026-01-01T00:00:00.000Z")
const AT = NOW.toISOString()
const open = (accountId: string): LedgerCommand => ({ type: "OpenAccount", accountId, name: `n-${accountId}`, at: AT })
const deposit = (accountId: string, amount: bigint, reference: string): LedgerCommand => ({
  type: "Deposit",
  accountId,
  amount,
  reference,
  at: AT
})
const placeHold = (
  accountId: string,
  holdId: string,
  amount: bigint,
  keyId: string | null = null,
  keySpendLimit: bigint | null = null
): LedgerCommand => ({
  type: "PlaceHold",
  accountId,
  holdId,
  amount,
  keyId,
  keySpendLimit,
  model: "m",
  plugin: "text",
  requestId: null,
  expiresAt: null,
  at: AT
})
const settle = (accountId: string, holdId: string, cost: bigint): LedgerCommand => ({
  type: "SettleHold",
  accountId,
  holdId,
  cost,
  usage: { tokens: 3 },
  at: AT
})
const release = (accountId: string, holdId: string): LedgerCommand => ({
  type: "ReleaseHold",
  accountId,
  holdId,
  reason: "failed",
  at: AT
})

const items = (...commands: ReadonlyArray<LedgerCommand>): ReadonlyArray<BatchItem> =>
  commands.map((command) => ({ command, metadata: { test: true } }))
const commit = (...commands: ReadonlyArray<LedgerCommand>) => commitBatch(items(...commands), NOW, randomUUID)
const outcomes = (decisions: ReadonlyArray<BatchOutcome>) =>
  decisions.map((d) =>
    d._tag === "Accepted" ? (d.duplicate ? "Duplicate" : "Accepted") : d._tag === "Rejected" ? d.rejection._tag : d._tag
  )

const streamTypes = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ event_type: string }>`
      SELECT event_type FROM events WHERE stream_name = ${accountStream(accountId)} ORDER BY stream_position`
    return rows.map((r) => r.event_type)
  })

const streamEvents = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ event_type: string; data: unknown }>`
      SELECT event_type, data FROM events WHERE stream_name = ${accountStream(accountId)} ORDER BY stream_position`
    return rows.map((r) => ({ type: r.event_type, data: r.data }) as LedgerEvent)
  })

const accountRow = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ deposited: bigint; captured: bigint; held: bigint; version: bigint }>`
      SELECT deposited, captured, held, version FROM accounts WHERE id = ${accountId}`
    return rows[0]
  })

const streamVersion = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ version: bigint }>`
      SELECT version FROM streams WHERE stream_name = ${accountStream(accountId)}`
    return rows[0]?.version
  })

const eventCount = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM events`
  return rows[0].n
})

const _maxPosition = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ p: bigint }>`SELECT coalesce(max(global_position), 0) AS p FROM events`
  return BigInt(rows[0].p)
})

/** The projection row agrees with a fold of the account's own stream (replay = live) and with the stream head. */
const assertProjectionMatchesStream = (accountId: string) =>
  Effect.gen(function* () {
    const row = yield* accountRow(accountId)
    const replayed = fold(initialState(accountId), yield* streamEvents(accountId))
    assert.strictEqual(row.deposited, replayed.deposited)
    assert.strictEqual(row.captured, replayed.captured)
    assert.strictEqual(row.held, replayed.held)
    assert.strictEqual(row.version, yield* streamVersion(accountId))
    assert.isTrue(row.deposited - row.captured - row.held >= 0n)
  })

const insertKey = (accountId: string, spendLimit: bigint | null) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const id = randomUUID()
    const hash = new Uint8Array(Buffer.from(id.replaceAll("-", ""), "hex"))
    yield* sql`INSERT INTO api_keys (id, account_id, name, prefix, key_hash, created_at, spend_limit)
      VALUES (${id}, ${accountId}, 'k', 'tg_', ${hash}, ${NOW}, ${spendLimit})`
    return id
  })

const keyRow = (keyId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ spent: bigint; held: bigint }>`SELECT spent, held FROM api_keys WHERE id = ${keyId}`
    return rows[0]
  })

describe("refusedState: which database errors are about one command's data", () => {
  const error = (code: string | undefined) => ({ _tag: "SqlError", cause: code === undefined ? {} : { code } })
  it("splits on data exceptions, out-of-range values, constraint and limit errors", () => {
    for (const code of ["22P05", "22P02", "22003", "22021", "23502", "23514", "54000", "42804"]) {
      assert.strictEqual(refusedState(error(code)), code, code)
    }
  })
  it("does not split when the database, the connection or a concurrent writer is the cause", () => {
    for (const code of [
      undefined,
      "08006",
      "08001",
      "25P02",
      "40001",
      "40P01",
      "53300",
      "57P01",
      "57014",
      "58030",
      "XX000"
    ]) {
      assert.isUndefined(refusedState(error(code)), String(code))
    }
  })
})

for (const { target, storeLayer } of availableStores("LedgerStore")) {
  layer(storeLayer, { excludeTestServices: true, timeout: "60 seconds" })(`LedgerStore on ${target.name}`, (it) => {
    it.effect("a batch over several accounts commits the accepted commands and leaves no trace of the rejected", () =>
      Effect.gen(function* () {
        const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()]
        assert.deepStrictEqual(outcomes(yield* commit(open(a), open(b), deposit(a, usd("10"), "a-1"))), [
          "Accepted",
          "Accepted",
          "Accepted"
        ])
        const before = yield* eventCount
        const [holdA, holdB, holdA2] = [randomUUID(), randomUUID(), randomUUID()]
        const decisions = yield* commit(
          deposit(a, usd("5"), "a-2"),
          placeHold(a, holdA, usd("100")), // more than the 15 available
          open(a), // exists
          deposit(c, usd("1"), "c-1"), // never opened
          placeHold(b, holdB, usd("1")), // b has nothing yet
          deposit(b, usd("3"), "b-1"),
          placeHold(a, holdA2, usd("4")),
          settle(a, randomUUID(), usd("1")), // unknown hold
          deposit(a, usd("5"), "a-1"), // a reference already deposited, with another amount
          deposit(b, 0n, "b-0"),
          open(d)
        )
        assert.deepStrictEqual(outcomes(decisions), [
          "Accepted",
          "InsufficientBalance",
          "AccountAlreadyExists",
          "AccountNotFound",
          "InsufficientBalance",
          "Accepted",
          "Accepted",
          "HoldNotFound",
          "DepositReferenceReused",
          "InvalidAmount",
          "Accepted"
        ])
        assert.strictEqual((yield* eventCount) - before, 4)
        assert.deepStrictEqual(yield* streamTypes(a), [
          "AccountOpened",
          "FundsDeposited",
          "FundsDeposited",
          "HoldPlaced"
        ])
        assert.deepStrictEqual(yield* streamTypes(b), ["AccountOpened", "FundsDeposited"])
        assert.deepStrictEqual(yield* streamTypes(c), [])
        assert.deepStrictEqual(yield* streamTypes(d), ["AccountOpened"])
        assert.isUndefined(yield* accountRow(c))
        assert.isUndefined(yield* streamVersion(c))

        const rowA = yield* accountRow(a)
        assert.deepStrictEqual(rowA, { deposited: usd("15"), captured: 0n, held: usd("4"), version: 4n })
        assert.deepStrictEqual(yield* accountRow(b), { deposited: usd("3"), captured: 0n, held: 0n, version: 2n })
        assert.deepStrictEqual(yield* accountRow(d), { deposited: 0n, captured: 0n, held: 0n, version: 1n })
        for (const id of [a, b, d]) yield* assertProjectionMatchesStream(id)

        const sql = yield* SqlClient.SqlClient
        const holds = yield* sql<{ hold_id: string; status: string; amount: bigint }>`
          SELECT hold_id, status, amount FROM holds WHERE hold_id = ANY(${[holdA, holdB, holdA2]}::uuid[])`
        assert.deepStrictEqual(
          holds.map((h) => ({ ...h })),
          [{ hold_id: holdA2, status: "pending", amount: usd("4") }]
        )
        const deposits = yield* sql<{ reference: string; amount: bigint }>`
          SELECT reference, amount FROM deposits WHERE account_id = ANY(${[a, b, c]}::uuid[]) ORDER BY reference`
        assert.deepStrictEqual(
          deposits.map((r) => ({ ...r })),
          [
            { reference: "a-1", amount: usd("10") },
            { reference: "a-2", amount: usd("5") },
            { reference: "b-1", amount: usd("3") }
          ]
        )
        const metadata = yield* sql<{ metadata: unknown }>`
          SELECT metadata FROM events WHERE stream_name = ${accountStream(a)} ORDER BY stream_position DESC LIMIT 1`
        assert.deepStrictEqual(metadata[0].metadata, { test: true })
      })
    )

    it.effect("order inside a batch matters: each command is decided on the state the previous ones left", () =>
      Effect.gen(function* () {
        const [e, f] = [randomUUID(), randomUUID()]
        const [holdE, holdF] = [randomUUID(), randomUUID()]
        assert.deepStrictEqual(
          outcomes(yield* commit(open(e), deposit(e, usd("5"), "e-1"), placeHold(e, holdE, usd("5")))),
          ["Accepted", "Accepted", "Accepted"]
        )
        assert.deepStrictEqual(
          outcomes(yield* commit(open(f), placeHold(f, holdF, usd("5")), deposit(f, usd("5"), "f-1"))),
          ["Accepted", "InsufficientBalance", "Accepted"]
        )
        assert.deepStrictEqual(yield* accountRow(e), { deposited: usd("5"), captured: 0n, held: usd("5"), version: 3n })
        assert.deepStrictEqual(yield* accountRow(f), { deposited: usd("5"), captured: 0n, held: 0n, version: 2n })

        // A hold placed, settled and released in one batch: it resolves once; the same reference twice deposits once.
        const g = randomUUID()
        const holdG = randomUUID()
        assert.deepStrictEqual(
          outcomes(
            yield* commit(
              open(g),
              deposit(g, usd("10"), "g-1"),
              deposit(g, usd("10"), "g-1"),
              placeHold(g, holdG, usd("6")),
              placeHold(g, randomUUID(), usd("5")), // only 4 left while holdG is pending
              settle(g, holdG, usd("2.5")),
              release(g, holdG),
              placeHold(g, randomUUID(), usd("5")) // the refund made room again
            )
          ),
          [
            "Accepted",
            "Accepted",
            "Duplicate",
            "Accepted",
            "InsufficientBalance",
            "Accepted",
            "HoldNotPending",
            "Accepted"
          ]
        )
        assert.deepStrictEqual(yield* streamTypes(g), [
          "AccountOpened",
          "FundsDeposited",
          "HoldPlaced",
          "UsageRecalculated",
          "RefundIssued",
          "HoldPlaced"
        ])
        assert.deepStrictEqual(yield* accountRow(g), {
          deposited: usd("10"),
          captured: usd("2.5"),
          held: usd("5"),
          version: 6n
        })
        for (const id of [e, f, g]) yield* assertProjectionMatchesStream(id)
      })
    )

    it.effect("a later batch loads the holds, keys and deposit references it touches", () =>
      Effect.gen(function* () {
        const account = randomUUID()
        yield* commit(open(account), deposit(account, usd("20"), "first"))
        const key = yield* insertKey(account, usd("6"))
        const [h1, h2, h3] = [randomUUID(), randomUUID(), randomUUID()]
        assert.deepStrictEqual(
          outcomes(
            yield* commit(
              placeHold(account, h1, usd("4"), key, usd("6")),
              placeHold(account, h2, usd("3"), key, usd("6")) // 4 + 3 > 6
            )
          ),
          ["Accepted", "SpendLimitExceeded"]
        )
        assert.deepStrictEqual({ ...(yield* keyRow(key)) }, { spent: 0n, held: usd("4") })
        assert.deepStrictEqual(
          outcomes(
            yield* commit(
              deposit(account, usd("20"), "first"), // reference from an earlier batch
              settle(account, h1, usd("5")), // hold from an earlier batch; cost above it: overage
              placeHold(account, h3, usd("1.000001"), key, usd("6")), // 5 spent + 1.000001 > 6
              placeHold(account, h3, usd("1"), key, usd("6"))
            )
          ),
          ["Duplicate", "Accepted", "SpendLimitExceeded", "Accepted"]
        )
        assert.deepStrictEqual({ ...(yield* keyRow(key)) }, { spent: usd("5"), held: usd("1") })
        assert.deepStrictEqual(yield* accountRow(account), {
          deposited: usd("20"),
          captured: usd("5"),
          held: usd("1"),
          version: 6n
        })
        const sql = yield* SqlClient.SqlClient
        const [hold] = yield* sql<{ status: string; captured: bigint; refunded: bigint }>`
          SELECT status, captured, refunded FROM holds WHERE hold_id = ${h1}`
        assert.deepStrictEqual({ ...hold }, { status: "settled", captured: usd("5"), refunded: 0n })
        assert.deepStrictEqual(outcomes(yield* commit(release(account, h1), settle(account, h1, 0n))), [
          "HoldNotPending",
          "HoldNotPending"
        ])
        yield* assertProjectionMatchesStream(account)
      })
    )

    it.effect("a companion commits with its accepted command only, at its expected version, once per stream", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const a = randomUUID()
        yield* commit(open(a), deposit(a, usd("1"), "seed"))
        const task = `t-${randomUUID()}`
        const companion = (expected: bigint | "no_stream", note: string, stream = task) => ({
          stream,
          expected,
          events: [{ type: "TaskNoted", data: { note } }],
          // The companion's read-model write joins the batch statement; a marker row proves it ran.
          projection: (client: SqlClient.SqlClient) =>
            client`INSERT INTO deposits (account_id, reference, amount, at) VALUES (${a}, ${`marker-${note}`}, 0, ${AT})`
        })
        const [h1, h2, h3] = [randomUUID(), randomUUID(), randomUUID()]
        const decided = yield* commitBatch(
          [
            { command: placeHold(a, h1, usd("0.5")), metadata: {}, companion: companion("no_stream", "first") },
            // Same new stream again in one batch: refused, and its hold is not placed.
            { command: placeHold(a, h2, usd("0.1")), metadata: {}, companion: companion("no_stream", "second") },
            // A fresh companion stream but a ledger rejection: nothing of it is written.
            {
              command: placeHold(a, h3, usd("5")),
              metadata: {},
              companion: companion("no_stream", "third", `${task}-other`)
            }
          ],
          NOW,
          randomUUID
        )
        assert.deepStrictEqual(outcomes(decided), ["Accepted", "CompanionConflict", "InsufficientBalance"])
        const written = yield* sql<{ event_type: string; data: { note: string } }>`
          SELECT event_type, data FROM events WHERE stream_name = ${task} ORDER BY stream_position`
        assert.deepStrictEqual(
          written.map((r) => r.data.note),
          ["first"]
        )
        const markers = yield* sql<{ reference: string }>`
          SELECT reference FROM deposits WHERE account_id = ${a} AND reference LIKE 'marker-%'`
        assert.deepStrictEqual(
          markers.map((r) => r.reference),
          ["marker-first"]
        )
        assert.strictEqual((yield* sql`SELECT 1 FROM holds WHERE hold_id IN (${h2}, ${h3})`).length, 0)
        assert.strictEqual((yield* sql`SELECT 1 FROM events WHERE stream_name = ${`${task}-other`}`).length, 0)
        // A stale expected version is refused without failing the batch's other commands.
        const later = yield* commitBatch(
          [
            { command: settle(a, h1, usd("0.2")), metadata: {}, companion: companion("no_stream", "stale") },
            { command: deposit(a, usd("1"), "other"), metadata: {} }
          ],
          NOW,
          randomUUID
        )
        assert.deepStrictEqual(outcomes(later), ["CompanionConflict", "Accepted"])
        const settled = yield* commitBatch(
          [{ command: settle(a, h1, usd("0.2")), metadata: {}, companion: companion(1n, "settled") }],
          NOW,
          randomUUID
        )
        assert.deepStrictEqual(outcomes(settled), ["Accepted"])
        const version = yield* sql<{ version: string }>`SELECT version::text FROM streams WHERE stream_name = ${task}`
        assert.strictEqual(version[0]?.version, "2")
        yield* assertProjectionMatchesStream(a)
      })
    )

    it.effect("batches committed at once by several writers (other instances) on one account never overspend", () =>
      Effect.gen(function* () {
        const a = randomUUID()
        yield* commit(open(a), deposit(a, usd("10"), "seed"))
        const key = yield* insertKey(a, usd("8"))
        // Each batch reads the account before the others write: all but one collide on the stream position and are
        // decided again with the head locked, on the state the winners left.
        const decided = yield* Effect.forEach(
          Array.from({ length: 24 }, () => randomUUID()),
          (hold) => commit(placeHold(a, hold, usd("1"), key, usd("8"))),
          { concurrency: "unbounded" }
        )
        const accepted = decided.filter((d) => d[0]._tag === "Accepted").length
        assert.strictEqual(accepted, 8)
        assert.deepStrictEqual(
          [...new Set(decided.flatMap((d) => (d[0]._tag === "Rejected" ? [d[0].rejection._tag] : [])))],
          ["SpendLimitExceeded"]
        )
        assert.deepStrictEqual(yield* keyRow(key), { spent: 0n, held: usd("8") })
        assert.strictEqual(yield* streamVersion(a), 10n)
        yield* assertProjectionMatchesStream(a)
      })
    )

    it.effect("a batch is atomic: when its transaction fails nothing of it is written", () =>
      Effect.gen(function* () {
        const [a, b] = [randomUUID(), randomUUID()]
        yield* commit(open(a), open(b), deposit(a, usd("10"), "seed"))
        const before = yield* eventCount
        const versionA = yield* streamVersion(a)
        const holdA = randomUUID()
        // The decider accepts a reference with a NUL in it; the database does not (jsonb and text refuse U+0000), so
        // this checks the rollback, not a pre-check.
        const exit = yield* Effect.exit(
          commit(
            deposit(a, usd("1"), "valid"),
            placeHold(a, holdA, usd("2")),
            open(randomUUID()),
            deposit(b, usd("1"), "poisoned\u0000reference")
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) {
          const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
          const error = (reason as { error: { _tag: string; message: string } } | undefined)?.error
          assert.strictEqual(error?._tag, "StoreUnavailable")
        }
        assert.strictEqual(yield* eventCount, before)
        assert.strictEqual(yield* streamVersion(a), versionA)
        assert.strictEqual(yield* streamVersion(b), 1n)
        assert.deepStrictEqual(yield* accountRow(a), { deposited: usd("10"), captured: 0n, held: 0n, version: 2n })
        assert.deepStrictEqual(yield* accountRow(b), { deposited: 0n, captured: 0n, held: 0n, version: 1n })
        const sql = yield* SqlClient.SqlClient
        assert.strictEqual((yield* sql`SELECT 1 FROM holds WHERE hold_id = ${holdA}`).length, 0)
        assert.strictEqual(
          (yield* sql`SELECT 1 FROM deposits WHERE account_id = ${a} AND reference = 'valid'`).length,
          0
        )
        // Nothing was burned: the same commands without the poison commit normally.
        assert.deepStrictEqual(outcomes(yield* commit(deposit(a, usd("1"), "valid"), placeHold(a, holdA, usd("2")))), [
          "Accepted",
          "Accepted"
        ])
        assert.deepStrictEqual(yield* accountRow(a), {
          deposited: usd("11"),
          captured: 0n,
          held: usd("2"),
          version: 4n
        })
        yield* assertProjectionMatchesStream(a)
        yield* assertProjectionMatchesStream(b)
      })
    )

    it.effect("one poisoned command in a batch of 255 good ones from other accounts fails alone; all 255 commit", () =>
      Effect.gen(function* () {
        const accounts = Array.from({ length: 256 }, () => randomUUID())
        yield* commit(...accounts.map(open))
        const stats = new WriterStats()
        const batch = items(
          ...accounts.map((id, i) =>
            i === 137 ? deposit(id, usd("1"), "poisoned\u0000reference") : deposit(id, usd("2"), `good-${i}`)
          )
        )
        const results = yield* commitIsolated(batch, NOW, randomUUID, new KnownAccounts(), stats)
        const tags = results.map((r) => r._tag)
        assert.strictEqual(tags.filter((t) => t === "Accepted").length, 255)
        assert.strictEqual(tags[137], "StoreRefused")
        assert.strictEqual((results[137] as StoreRefused).sqlState.slice(0, 2), "22")
        // Halving 256 down to one command: one split per level.
        assert.strictEqual(stats.isolations, 8)
        for (const [i, id] of accounts.entries()) {
          const row = yield* accountRow(id)
          assert.strictEqual(row?.deposited, i === 137 ? 0n : usd("2"), `account ${i}`)
        }
        yield* assertProjectionMatchesStream(accounts[0] as string)
        yield* assertProjectionMatchesStream(accounts[137] as string)
        // The refused command burned nothing: the same account takes a clean deposit at once.
        assert.deepStrictEqual(outcomes(yield* commit(deposit(accounts[137] as string, usd("3"), "clean"))), [
          "Accepted"
        ])
      })
    )

    it.effect(
      "a hold id placed again, after it was settled or while it is pending, is refused alone and moves nothing",
      () =>
        Effect.gen(function* () {
          const [a, b] = [randomUUID(), randomUUID()]
          yield* commit(open(a), open(b), deposit(a, usd("10"), "seed-a"), deposit(b, usd("10"), "seed-b"))
          const [settled, pending] = [randomUUID(), randomUUID()]
          yield* commit(placeHold(a, settled, usd("2")), settle(a, settled, usd("1")), placeHold(a, pending, usd("3")))
          const before = yield* accountRow(a)
          assert.deepStrictEqual([before?.captured, before?.held], [usd("1"), usd("3")])
          // Without a writer's memory of the account (another instance, or after a restart), and with it.
          const remembering = new KnownAccounts()
          yield* commitIsolated(
            items(deposit(a, usd("1"), "prime-a"), deposit(b, usd("1"), "prime-b")),
            NOW,
            randomUUID,
            remembering
          )
          for (const known of [undefined, remembering]) {
            const bystander = randomUUID()
            const results = yield* commitIsolated(
              items(
                placeHold(a, settled, usd("2")),
                placeHold(b, bystander, usd("1")),
                placeHold(a, pending, usd("3"))
              ),
              NOW,
              randomUUID,
              known
            )
            const tags = results.map((r) => (r._tag === "Rejected" ? r.rejection._tag : r._tag))
            assert.strictEqual(tags[1], "Accepted", "the bystander's hold")
            assert.notStrictEqual(tags[0], "Accepted", "the settled hold's id placed again")
            assert.notStrictEqual(tags[2], "Accepted", "the pending hold's id placed again")
            yield* commit(release(b, bystander))
          }
          const after = yield* accountRow(a)
          assert.deepStrictEqual([after?.captured, after?.held], [usd("1"), usd("3")])
          assert.deepStrictEqual(
            (yield* streamTypes(a)).filter((t) => t === "HoldPlaced"),
            ["HoldPlaced", "HoldPlaced"]
          )
          yield* assertProjectionMatchesStream(a)
        })
    )

    it.effect("poisons of every kind in one batch each fail alone, in order with the commands around them", () =>
      Effect.gen(function* () {
        const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()]
        yield* commit(open(a), open(b), open(c), deposit(a, usd("10"), "seed-a"), deposit(c, usd("10"), "seed-c"))
        const [h1, h2, h3] = [randomUUID(), randomUUID(), randomUUID()]
        const batch: Array<BatchItem> = [
          { command: placeHold(a, h1, usd("4")), metadata: {} },
          // A lone surrogate in metadata: valid in a JS string, refused by jsonb.
          { command: placeHold(c, h2, usd("1")), metadata: { requestId: "req_\ud800" } },
          { command: deposit(b, usd("5"), "b-1"), metadata: {} },
          { command: { ...(placeHold(a, h3, usd("4")) as PlaceHoldCommand), model: "nul\u0000model" }, metadata: {} },
          // Decided after the refused hold of a: sees only h1 held, so 6 is still available.
          { command: placeHold(a, randomUUID(), usd("6")), metadata: {} },
          { command: settle(a, h1, usd("1")), metadata: {} }
        ]
        const results = yield* commitIsolated(batch, NOW, randomUUID)
        assert.deepStrictEqual(
          results.map((r) => r._tag),
          ["Accepted", "StoreRefused", "Accepted", "StoreRefused", "Accepted", "Accepted"]
        )
        assert.deepStrictEqual(yield* accountRow(a), {
          deposited: usd("10"),
          captured: usd("1"),
          held: usd("6"),
          version: 6n
        })
        assert.deepStrictEqual(yield* accountRow(b), { deposited: usd("5"), captured: 0n, held: 0n, version: 2n })
        assert.deepStrictEqual(yield* accountRow(c), { deposited: usd("10"), captured: 0n, held: 0n, version: 2n })
        yield* assertProjectionMatchesStream(a)
        yield* assertProjectionMatchesStream(c)
      })
    )
  })
}
