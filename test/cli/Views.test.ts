import { assert, describe, it } from "@effect/vitest"
import type { KeySummary } from "../../src/cli/AdminApi.ts"
import {
  accountDetailsView,
  accountListView,
  depositView,
  keyCreatedView,
  keyListView,
  keyStatus,
  ledgerView,
  replayView
} from "../../src/cli/Views.ts"

const lines = (...rows: Array<string>) => rows.join("\n")

const balance = { deposited: "12.500000", captured: "1.250000", held: "0.500000", available: "10.750000" }

const key = (overrides: Partial<KeySummary> = {}): KeySummary => ({
  id: "key_1",
  name: "ci",
  accountId: "acc_1",
  prefix: "sk-tg-ab12",
  createdAt: "2026-11-22T05:00:00.000Z",
  lastUsedAt: null,
  expiresAt: null,
  models: null,
  spendLimit: null,
  spent: "0.000000",
  revokedAt: null,
  ...overrides
})

describe("views", () => {
  it("lists accounts with their available balance, whether the server sends a string or a balance object", () => {
    const view = accountListView({
      data: [
        { id: "acc_1", name: "Acme", createdAt: "2026-11-22T05:00:00.000Z", balance },
        { id: "acc_2", name: "Globex Corporation", createdAt: "2026-11-22T05:01:00.000Z", balance: "3.000000" }
      ]
    })
    assert.strictEqual(
      view,
      lines(
        "ID     NAME                AVAILABLE  CREATED",
        "acc_1  Acme                10.750000  2026-11-22T05:00:00.000Z",
        "acc_2  Globex Corporation   3.000000  2026-11-22T05:01:00.000Z"
      )
    )
  })

  it("says how to start when there are no accounts", () => {
    assert.match(accountListView({ data: [] }), /No accounts yet.*tollgate accounts create/)
  })

  it("shows an account with every balance component", () => {
    assert.strictEqual(
      accountDetailsView({ id: "acc_1", name: "Acme", createdAt: "2026-11-22T05:00:00.000Z", balance }),
      lines(
        "id         acc_1",
        "name       Acme",
        "created    2026-11-22T05:00:00.000Z",
        "deposited  12.500000",
        "captured   1.250000",
        "held       0.500000",
        "available  10.750000"
      )
    )
  })

  it("tells a repeated deposit apart from a new one", () => {
    const recorded = { accountId: "acc_1", amount: "12.500000", reference: "inv-1", balance }
    assert.match(depositView(recorded, { alreadyRecorded: false }), /^Deposited 12\.500000 to acc_1\./)
    assert.match(depositView(recorded, { alreadyRecorded: true }), /^Deposit inv-1 was already recorded/)
  })

  it("prints a new key's secret on a line of its own", () => {
    const view = keyCreatedView({
      id: "key_1",
      key: "sk-tg-secret",
      name: "ci",
      accountId: "acc_1",
      createdAt: "2026-11-22T05:00:00.000Z",
      models: ["gpt-4o-mini", "claude-haiku"],
      expiresAt: null,
      spendLimit: "5.000000"
    })
    assert.include(view.split("\n"), "  sk-tg-secret")
    assert.include(view, "models       gpt-4o-mini,claude-haiku")
    assert.include(view, "spend limit  5.000000")
  })

  it("lists keys with their status and no secret", () => {
    const now = Date.parse("2026-11-22T06:00:00Z")
    const view = keyListView(
      [
        key(),
        key({ id: "key_2", name: "old", revokedAt: "2026-11-22T05:30:00.000Z", spendLimit: "5.000000" }),
        key({ id: "key_3", name: "trial", expiresAt: "2026-11-22T05:59:59.000Z", models: ["gpt-4o-mini"] })
      ],
      now
    )
    assert.strictEqual(
      view,
      lines(
        "ID     NAME   PREFIX      MODELS          SPENT     LIMIT  EXPIRES                   LAST USED  STATUS",
        "key_1  ci     sk-tg-ab12  all          0.000000         -  -                         -          active",
        "key_2  old    sk-tg-ab12  all          0.000000  5.000000  -                         -          revoked",
        "key_3  trial  sk-tg-ab12  gpt-4o-mini  0.000000         -  2026-11-22T05:59:59.000Z  -          expired"
      )
    )
  })

  it("computes key status from revocation first, then expiry", () => {
    const now = Date.parse("2026-11-22T06:00:00Z")
    assert.strictEqual(keyStatus(key({ expiresAt: "2026-11-23T00:00:00Z" }), now), "active")
    assert.strictEqual(keyStatus(key({ expiresAt: "2026-11-21T00:00:00Z", revokedAt: "x" }), now), "revoked")
  })

  it("renders ledger entries, with - for fields an event does not have", () => {
    const view = ledgerView([
      { position: 1, type: "FundsDeposited", amount: "12.500000", at: "2026-11-22T05:00:00.000Z" },
      {
        position: "2",
        type: "HoldPlaced",
        amount: "0.400000",
        holdId: "hold_1",
        requestId: "req_1",
        keyId: "key_1",
        model: "gpt-4o-mini",
        at: "2026-11-22T05:00:01.000Z"
      }
    ])
    assert.strictEqual(
      view,
      lines(
        "POSITION  TYPE               AMOUNT  MODEL        KEY    REQUEST  HOLD    AT",
        "       1  FundsDeposited  12.500000  -            -      -        -       2026-11-22T05:00:00.000Z",
        "       2  HoldPlaced       0.400000  gpt-4o-mini  key_1  req_1    hold_1  2026-11-22T05:00:01.000Z"
      )
    )
  })

  it("reports a clean replay in one line and every mismatch otherwise", () => {
    assert.strictEqual(
      replayView({ ok: true, events: 42, accounts: 3, mismatches: [] }),
      "Replay verified (42 events, 3 accounts): the projections match the events."
    )
    assert.strictEqual(
      replayView({
        ok: false,
        events: 42,
        accounts: 3,
        mismatches: [
          { table: "balances", key: "acc_1", live: { held: "1.000000" }, replayed: { held: "0.000000" } },
          { kind: "orphan", id: 7 }
        ]
      }),
      lines(
        "Replay found 2 mismatches (42 events, 3 accounts):",
        '  - balances acc_1: live {"held":"1.000000"}, replayed {"held":"0.000000"}',
        "  - kind=orphan id=7"
      )
    )
  })
})
