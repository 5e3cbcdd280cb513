import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { decide, evolve, fold } from "../../../src/domain/ledger/LedgerAccount.ts"
import {
  type AccountState,
  available,
  type Decision,
  initialState,
  type LedgerCommand,
  type LedgerRejection
} from "../../../src/domain/ledger/LedgerState.ts"
import type { LedgerEvent, RefundReason } from "../../../src/domain/ledger/LedgerEvent.ts"
import { formatMicros, MAX_MICROS, max, min, parseDecimal } from "../../../src/domain/Money.ts"
import { usd } from "../../support/Money.ts"

const NO_METRICS = { inputTokens: 0, outputTokens: 0, images: 0, videoSeconds: 0 }
const ACCOUNT = "acc-1"
const AT = "2026-01-01T00:00:00.000Z"
const money = (micros: bigint): string => formatMicros(micros)

// ---- given / when / then -------------------------------------------------------------------------------------------

const opened: LedgerEvent = { type: "AccountOpened", data: { accountId: ACCOUNT, name: "acme", at: AT } }
const deposited = (amount: string, reference = "ref-1"): LedgerEvent => ({
  type: "FundsDeposited",
  data: { accountId: ACCOUNT, amount: money(usd(amount)), reference, at: AT }
})
const holdPlaced = (holdId: string, amount: string, keyId: string | null = null): LedgerEvent => ({
  type: "HoldPlaced",
  data: {
    accountId: ACCOUNT,
    holdId,
    amount: money(usd(amount)),
    keyId,
    model: "m",
    plugin: "text",
    requestId: null,
    expiresAt: null,
    at: AT
  }
})

const given = (...events: ReadonlyArray<LedgerEvent>): AccountState => fold(initialState(ACCOUNT), events)

const open: LedgerCommand = { type: "OpenAccount", accountId: ACCOUNT, name: "acme", at: AT }
const deposit = (amount: bigint, reference = "ref-1"): LedgerCommand => ({
  type: "Deposit",
  accountId: ACCOUNT,
  amount,
  reference,
  at: AT
})
const placeHold = (
  holdId: string,
  amount: bigint,
  keyId: string | null = null,
  keySpendLimit: bigint | null = null
): LedgerCommand => ({
  type: "PlaceHold",
  accountId: ACCOUNT,
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
const settle = (holdId: string, cost: bigint): LedgerCommand => ({
  type: "SettleHold",
  accountId: ACCOUNT,
  holdId,
  cost,
  usage: { tokens: 1 },
  at: AT
})
const release = (holdId: string, reason: RefundReason = "failed"): LedgerCommand => ({
  type: "ReleaseHold",
  accountId: ACCOUNT,
  holdId,
  reason,
  at: AT
})

const thenEvents = (decision: Decision, expected: ReadonlyArray<LedgerEvent>, duplicate = false) => {
  assert.strictEqual(
    decision._tag,
    "Accepted",
    JSON.stringify(decision, (_k, v) => (typeof v === "bigint" ? `${v}n` : v))
  )
  if (decision._tag === "Accepted") {
    assert.deepStrictEqual(decision.events, expected)
    assert.strictEqual(decision.duplicate, duplicate)
  }
}
const thenRejected = (decision: Decision, expected: LedgerRejection) => {
  assert.strictEqual(decision._tag, "Rejected")
  if (decision._tag === "Rejected") assert.deepStrictEqual(decision.rejection, expected)
}
const afterwards = (state: AccountState, decision: Decision): AccountState =>
  decision._tag === "Accepted" ? fold(state, decision.events) : state

describe("LedgerAccount decider", () => {
  describe("OpenAccount", () => {
    it("opens a new account", () => {
      const state = given()
      const decision = decide(state, open)
      thenEvents(decision, [opened])
      const next = afterwards(state, decision)
      assert.isTrue(next.exists)
      assert.strictEqual(next.name, "acme")
      assert.strictEqual(next.createdAt, AT)
      assert.strictEqual(available(next), 0n)
    })

    it("refuses to open an account twice", () => {
      thenRejected(decide(given(opened), open), { _tag: "AccountAlreadyExists", accountId: ACCOUNT })
    })

    it("refuses every other command on an account that does not exist", () => {
      for (const command of [deposit(usd("1")), placeHold("h1", usd("1")), settle("h1", 0n), release("h1")]) {
        thenRejected(decide(given(), command), { _tag: "AccountNotFound", accountId: ACCOUNT })
      }
    })
  })

  describe("Deposit", () => {
    it("deposits funds", () => {
      const state = given(opened)
      const decision = decide(state, deposit(usd("12.5"), "top-up-1"))
      thenEvents(decision, [deposited("12.5", "top-up-1")])
      const next = afterwards(state, decision)
      assert.strictEqual(next.deposited, usd("12.5"))
      assert.strictEqual(available(next), usd("12.5"))
      assert.strictEqual(next.depositReferences.get("top-up-1"), usd("12.5"))
    })

    it("answers a duplicate reference with no events, flagged duplicate", () => {
      const state = given(opened, deposited("3", "same"))
      thenEvents(decide(state, deposit(usd("3"), "same")), [], true)
      // Another amount under the same reference is a mistake, not a retry: refused, nothing deposited.
      const reused = decide(state, deposit(usd("7"), "same"))
      assert.strictEqual(reused._tag, "Rejected")
      assert.strictEqual(reused._tag === "Rejected" ? reused.rejection._tag : undefined, "DepositReferenceReused")
      thenEvents(decide(state, deposit(usd("3"), "other")), [deposited("3", "other")])
    })

    it("refuses a deposit whose new total would not fit the ledger's 64-bit balance", () => {
      const state = afterwards(given(opened), decide(given(opened), deposit(MAX_MICROS - 5n, "almost-all")))
      thenEvents(decide(state, deposit(5n, "to-the-brim")), [deposited(formatMicros(5n), "to-the-brim")])
      thenRejected(decide(state, deposit(6n, "one-too-many")), {
        _tag: "InvalidAmount",
        message: `this deposit would take the account's deposits past the ledger's maximum of ${formatMicros(MAX_MICROS)}`
      })
      // A retry of the deposit that filled it is still answered as the original.
      thenEvents(decide(state, deposit(MAX_MICROS - 5n, "almost-all")), [], true)
    })

    it("refuses zero and negative amounts", () => {
      for (const amount of [0n, -1n]) {
        thenRejected(decide(given(opened), deposit(amount)), {
          _tag: "InvalidAmount",
          message: "amount must be greater than zero"
        })
      }
    })
  })

  describe("PlaceHold", () => {
    it("reserves the amount", () => {
      const state = given(opened, deposited("10"))
      const decision = decide(state, placeHold("h1", usd("4"), "k1", usd("5")))
      thenEvents(decision, [holdPlaced("h1", "4", "k1")])
      const next = afterwards(state, decision)
      assert.strictEqual(next.held, usd("4"))
      assert.strictEqual(available(next), usd("6"))
      assert.deepStrictEqual(next.keys.get("k1"), { spent: 0n, held: usd("4") })
      assert.strictEqual(next.holds.get("h1")?.status, "pending")
    })

    it("may reserve exactly the available balance, and nothing more", () => {
      const state = given(opened, deposited("10"), holdPlaced("h0", "3"))
      thenEvents(decide(state, placeHold("h1", usd("7"))), [holdPlaced("h1", "7")])
      thenRejected(decide(state, placeHold("h1", usd("7.000001"))), {
        _tag: "InsufficientBalance",
        available: usd("7"),
        requested: usd("7.000001")
      })
    })

    it("refuses a hold on an empty account", () => {
      thenRejected(decide(given(opened), placeHold("h1", 1n)), {
        _tag: "InsufficientBalance",
        available: 0n,
        requested: 1n
      })
    })

    it("refuses a hold that would take the key past its spend limit (spent + held + amount)", () => {
      const state = given(
        opened,
        deposited("100"),
        holdPlaced("h0", "2", "k1"),
        {
          type: "UsageRecalculated",
          data: {
            accountId: ACCOUNT,
            holdId: "h0",
            cost: "1.000000",
            captured: "1.000000",
            usage: null,
            metrics: NO_METRICS,
            at: AT
          }
        },
        {
          type: "RefundIssued",
          data: { accountId: ACCOUNT, holdId: "h0", amount: "1.000000", reason: "unused", at: AT }
        },
        holdPlaced("h1", "3", "k1")
      )
      assert.deepStrictEqual(state.keys.get("k1"), { spent: usd("1"), held: usd("3") })
      // used = 1 spent + 3 held = 4; a limit of 5 leaves room for exactly 1.
      thenEvents(decide(state, placeHold("h2", usd("1"), "k1", usd("5"))), [holdPlaced("h2", "1", "k1")])
      thenRejected(decide(state, placeHold("h2", usd("1.000001"), "k1", usd("5"))), {
        _tag: "SpendLimitExceeded",
        limit: usd("5"),
        used: usd("4"),
        requested: usd("1.000001")
      })
      // Another key and a key without a limit are not limited by k1's use.
      thenEvents(decide(state, placeHold("h2", usd("5"), "k2", usd("5"))), [holdPlaced("h2", "5", "k2")])
      thenEvents(decide(state, placeHold("h2", usd("50"), "k1", null)), [holdPlaced("h2", "50", "k1")])
    })

    it("checks the balance before the key limit", () => {
      thenRejected(decide(given(opened, deposited("1")), placeHold("h1", usd("2"), "k1", usd("1"))), {
        _tag: "InsufficientBalance",
        available: usd("1"),
        requested: usd("2")
      })
    })

    it("refuses a negative hold and a hold id already used", () => {
      const state = given(opened, deposited("10"), holdPlaced("h1", "1"))
      thenRejected(decide(state, placeHold("h2", -1n)), { _tag: "InvalidAmount", message: "a hold cannot be negative" })
      thenRejected(decide(state, placeHold("h1", usd("1"))), { _tag: "HoldAlreadyExists", holdId: "h1" })
    })
  })

  describe("SettleHold", () => {
    const base = given(opened, deposited("10"), holdPlaced("h1", "4", "k1"))

    it("captures a cost below the hold and refunds the rest", () => {
      const decision = decide(base, settle("h1", usd("1.5")))
      thenEvents(decision, [
        {
          type: "UsageRecalculated",
          data: {
            accountId: ACCOUNT,
            holdId: "h1",
            cost: "1.500000",
            captured: "1.500000",
            usage: { tokens: 1 },
            metrics: NO_METRICS,
            at: AT
          }
        },
        {
          type: "RefundIssued",
          data: { accountId: ACCOUNT, holdId: "h1", amount: "2.500000", reason: "unused", at: AT }
        }
      ])
      const next = afterwards(base, decision)
      assert.strictEqual(next.held, 0n)
      assert.strictEqual(next.captured, usd("1.5"))
      assert.strictEqual(available(next), usd("8.5"))
      assert.deepStrictEqual(next.keys.get("k1"), { spent: usd("1.5"), held: 0n })
      const hold = next.holds.get("h1")
      assert.strictEqual(hold?.status, "settled")
      assert.strictEqual(hold?.captured, usd("1.5"))
      assert.strictEqual(hold?.refunded, usd("2.5"))
    })

    it("captures a cost equal to the hold with no refund", () => {
      const decision = decide(base, settle("h1", usd("4")))
      thenEvents(decision, [
        {
          type: "UsageRecalculated",
          data: {
            accountId: ACCOUNT,
            holdId: "h1",
            cost: "4.000000",
            captured: "4.000000",
            usage: { tokens: 1 },
            metrics: NO_METRICS,
            at: AT
          }
        }
      ])
      const next = afterwards(base, decision)
      assert.strictEqual(next.captured, usd("4"))
      assert.strictEqual(available(next), usd("6"))
    })

    it("settles a zero cost as a full refund", () => {
      const decision = decide(base, settle("h1", 0n))
      const next = afterwards(base, decision)
      assert.strictEqual(next.captured, 0n)
      assert.strictEqual(available(next), usd("10"))
      assert.strictEqual(next.holds.get("h1")?.status, "settled")
    })

    it("charges a cost above the hold as an overage within the available balance", () => {
      const decision = decide(base, settle("h1", usd("5")))
      thenEvents(decision, [
        {
          type: "UsageRecalculated",
          data: {
            accountId: ACCOUNT,
            holdId: "h1",
            cost: "5.000000",
            captured: "4.000000",
            usage: { tokens: 1 },
            metrics: NO_METRICS,
            at: AT
          }
        },
        {
          type: "OverageCharged",
          data: { accountId: ACCOUNT, holdId: "h1", amount: "1.000000", uncollected: "0.000000", at: AT }
        }
      ])
      const next = afterwards(base, decision)
      assert.strictEqual(next.captured, usd("5"))
      assert.strictEqual(available(next), usd("5"))
      assert.deepStrictEqual(next.keys.get("k1"), { spent: usd("5"), held: 0n })
      assert.strictEqual(next.holds.get("h1")?.captured, usd("5"))
    })

    it("limits the overage to the available balance and writes the rest off", () => {
      // 10 deposited, 4 held by h1, 5 held by h2: 1 available.
      const state = fold(base, [holdPlaced("h2", "5")])
      const decision = decide(state, settle("h1", usd("7")))
      thenEvents(decision, [
        {
          type: "UsageRecalculated",
          data: {
            accountId: ACCOUNT,
            holdId: "h1",
            cost: "7.000000",
            captured: "4.000000",
            usage: { tokens: 1 },
            metrics: NO_METRICS,
            at: AT
          }
        },
        {
          type: "OverageCharged",
          data: { accountId: ACCOUNT, holdId: "h1", amount: "1.000000", uncollected: "2.000000", at: AT }
        }
      ])
      const next = afterwards(state, decision)
      assert.strictEqual(available(next), 0n)
      assert.strictEqual(next.held, usd("5"))
      assert.strictEqual(next.captured, usd("5"))
    })

    it("writes the whole overage off when nothing is available", () => {
      const state = given(opened, deposited("4"), holdPlaced("h1", "4"))
      const decision = decide(state, settle("h1", usd("6")))
      assert.strictEqual(decision._tag, "Accepted")
      const overage =
        decision._tag === "Accepted" ? decision.events.find((e) => e.type === "OverageCharged") : undefined
      assert.deepStrictEqual(overage?.data, {
        accountId: ACCOUNT,
        holdId: "h1",
        amount: "0.000000",
        uncollected: "2.000000",
        at: AT
      })
      assert.strictEqual(available(afterwards(state, decision)), 0n)
    })

    it("refuses a negative cost, an unknown hold and a hold already resolved", () => {
      thenRejected(decide(base, settle("h1", -1n)), { _tag: "InvalidAmount", message: "a cost cannot be negative" })
      thenRejected(decide(base, settle("nope", 0n)), { _tag: "HoldNotFound", holdId: "nope" })
      const settled = afterwards(base, decide(base, settle("h1", usd("1"))))
      thenRejected(decide(settled, settle("h1", usd("1"))), { _tag: "HoldNotPending", holdId: "h1", status: "settled" })
      const released = afterwards(base, decide(base, release("h1")))
      thenRejected(decide(released, settle("h1", usd("1"))), {
        _tag: "HoldNotPending",
        holdId: "h1",
        status: "released"
      })
    })
  })

  describe("ReleaseHold", () => {
    const base = given(opened, deposited("10"), holdPlaced("h1", "4", "k1"))

    it("refunds the whole hold and costs nothing", () => {
      for (const reason of ["failed", "rejected", "expired", "cancelled"] as const) {
        const decision = decide(base, release("h1", reason))
        thenEvents(decision, [
          { type: "RefundIssued", data: { accountId: ACCOUNT, holdId: "h1", amount: "4.000000", reason, at: AT } }
        ])
        const next = afterwards(base, decision)
        assert.strictEqual(next.held, 0n)
        assert.strictEqual(next.captured, 0n)
        assert.strictEqual(available(next), usd("10"))
        assert.deepStrictEqual(next.keys.get("k1"), { spent: 0n, held: 0n })
        assert.strictEqual(next.holds.get("h1")?.status, "released")
        assert.strictEqual(next.holds.get("h1")?.refunded, usd("4"))
      }
    })

    it("refuses an unknown hold and a hold already resolved", () => {
      thenRejected(decide(base, release("nope")), { _tag: "HoldNotFound", holdId: "nope" })
      const released = afterwards(base, decide(base, release("h1")))
      thenRejected(decide(released, release("h1", "expired")), {
        _tag: "HoldNotPending",
        holdId: "h1",
        status: "released"
      })
      const settled = afterwards(base, decide(base, settle("h1", 0n)))
      thenRejected(decide(settled, release("h1")), { _tag: "HoldNotPending", holdId: "h1", status: "settled" })
    })
  })

  it("evolve tolerates resolutions of holds it was not given (partial state in the writer)", () => {
    const state = given(opened, deposited("10"))
    const partial = { ...state, held: usd("4") } // the hold h9 is counted in the balance but not loaded
    const next = evolve(partial, {
      type: "RefundIssued",
      data: { accountId: ACCOUNT, holdId: "h9", amount: "4.000000", reason: "expired", at: AT }
    })
    assert.strictEqual(next.held, 0n)
    assert.strictEqual(next.holds.size, 0)
  })
})

// ---- properties over random command sequences ----------------------------------------------------------------------

/** An independent model of the rules, written from docs/ledger.md, against which the decider is compared. */
interface ModelHold {
  readonly amount: bigint
  readonly keyId: string | null
  status: "pending" | "settled" | "released"
  captured: bigint
  refunded: bigint
  resolutions: number
}

interface Model {
  exists: boolean
  deposited: bigint
  captured: bigint
  held: bigint
  readonly references: Map<string, bigint>
  readonly holds: Map<string, ModelHold>
  readonly keys: Map<string, { spent: bigint; held: bigint }>
}

const HOLD_IDS = ["h0", "h1", "h2", "h3", "h4", "h5"]
const KEY_IDS = [null, "k0", "k1", "k2"]
const REASONS: ReadonlyArray<RefundReason> = ["failed", "rejected", "expired", "cancelled"]

const commandArb: fc.Arbitrary<LedgerCommand> = fc.oneof(
  { weight: 1, arbitrary: fc.constant(open) },
  {
    weight: 3,
    arbitrary: fc
      .record({
        amount: fc.oneof(
          { weight: 9, arbitrary: fc.bigInt({ min: 1n, max: 1_500n }) },
          fc.bigInt({ min: -5n, max: 0n }),
          // Near the 64-bit ceiling: one such deposit fits, two do not.
          fc.bigInt({ min: MAX_MICROS - 2_000n, max: MAX_MICROS + 1n })
        ),
        reference: fc.constantFrom("r0", "r1", "r2", "r3", "r4", "r5")
      })
      .map(({ amount, reference }) => deposit(amount, reference))
  },
  {
    weight: 5,
    arbitrary: fc
      .record({
        holdId: fc.constantFrom(...HOLD_IDS),
        amount: fc.oneof({ weight: 19, arbitrary: fc.bigInt({ min: 0n, max: 800n }) }, fc.constant(-1n)),
        keyId: fc.constantFrom(...KEY_IDS),
        limit: fc.option(fc.bigInt({ min: 0n, max: 2_500n }), { nil: null })
      })
      .map(({ holdId, amount, keyId, limit }) => placeHold(holdId, amount, keyId, limit))
  },
  {
    weight: 4,
    arbitrary: fc
      .record({
        holdId: fc.constantFrom(...HOLD_IDS, "unknown"),
        cost: fc.oneof({ weight: 19, arbitrary: fc.bigInt({ min: 0n, max: 1_200n }) }, fc.constant(-1n))
      })
      .map(({ holdId, cost }) => settle(holdId, cost))
  },
  {
    weight: 3,
    arbitrary: fc
      .record({ holdId: fc.constantFrom(...HOLD_IDS, "unknown"), reason: fc.constantFrom(...REASONS) })
      .map(({ holdId, reason }) => release(holdId, reason))
  }
)

/**
 * Mostly sequences that open and fund the account first (so holds, settlements and overages are common); some that
 * start anywhere, to exercise AccountNotFound and the empty account.
 */
const sequenceArb = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .tuple(fc.bigInt({ min: 0n, max: 3_000n }), fc.array(commandArb, { minLength: 5, maxLength: 60, size: "large" }))
      .map(([seed, commands]) => [open, ...(seed > 0n ? [deposit(seed, "seed")] : []), ...commands])
  },
  { weight: 1, arbitrary: fc.array(commandArb, { maxLength: 20 }) }
)

/** What the model says the decider must answer: the tag of an acceptance or of the rejection. */
const expectedOutcome = (model: Model, command: LedgerCommand): string => {
  if (command.type === "OpenAccount") return model.exists ? "AccountAlreadyExists" : "Accepted"
  if (!model.exists) return "AccountNotFound"
  switch (command.type) {
    case "Deposit": {
      if (command.amount <= 0n || command.amount > MAX_MICROS) return "InvalidAmount"
      const earlier = model.references.get(command.reference)
      if (earlier !== undefined) return earlier === command.amount ? "Accepted" : "DepositReferenceReused"
      return model.deposited + command.amount > MAX_MICROS ? "InvalidAmount" : "Accepted"
    }
    case "PlaceHold": {
      if (command.amount < 0n) return "InvalidAmount"
      if (model.holds.has(command.holdId)) return "HoldAlreadyExists"
      if (command.amount > model.deposited - model.captured - model.held) return "InsufficientBalance"
      if (command.keyId !== null && command.keySpendLimit !== null) {
        const spend = model.keys.get(command.keyId) ?? { spent: 0n, held: 0n }
        if (spend.spent + spend.held + command.amount > command.keySpendLimit) return "SpendLimitExceeded"
      }
      return "Accepted"
    }
    case "SettleHold": {
      const hold = model.holds.get(command.holdId)
      if (hold === undefined) return "HoldNotFound"
      if (hold.status !== "pending") return "HoldNotPending"
      return command.cost < 0n ? "InvalidAmount" : "Accepted"
    }
    case "ReleaseHold": {
      const hold = model.holds.get(command.holdId)
      if (hold === undefined) return "HoldNotFound"
      return hold.status !== "pending" ? "HoldNotPending" : "Accepted"
    }
  }
}

/** Moves the model through an accepted command. */
const advance = (model: Model, command: LedgerCommand): void => {
  const keyOf = (keyId: string) => {
    const spend = model.keys.get(keyId) ?? { spent: 0n, held: 0n }
    model.keys.set(keyId, spend)
    return spend
  }
  switch (command.type) {
    case "OpenAccount":
      model.exists = true
      return
    case "Deposit":
      if (!model.references.has(command.reference)) {
        model.references.set(command.reference, command.amount)
        model.deposited += command.amount
      }
      return
    case "PlaceHold":
      model.holds.set(command.holdId, {
        amount: command.amount,
        keyId: command.keyId,
        status: "pending",
        captured: 0n,
        refunded: 0n,
        resolutions: 0
      })
      model.held += command.amount
      if (command.keyId !== null) keyOf(command.keyId).held += command.amount
      return
    case "SettleHold": {
      const hold = model.holds.get(command.holdId) as ModelHold
      const free = model.deposited - model.captured - model.held
      const capture = min(command.cost, hold.amount)
      const excess = command.cost - hold.amount
      const overage = max(0n, min(excess, free))
      hold.status = "settled"
      hold.captured = capture + overage
      hold.refunded = hold.amount - capture
      hold.resolutions += 1
      model.held -= hold.amount
      model.captured += capture + overage
      if (hold.keyId !== null) {
        const spend = keyOf(hold.keyId)
        spend.held -= hold.amount
        spend.spent += capture + overage
      }
      return
    }
    case "ReleaseHold": {
      const hold = model.holds.get(command.holdId) as ModelHold
      hold.status = "released"
      hold.refunded = hold.amount
      hold.resolutions += 1
      model.held -= hold.amount
      if (hold.keyId !== null) keyOf(hold.keyId).held -= hold.amount
      return
    }
  }
}

const amountOf = (text: string): bigint => parseDecimal(text) as bigint

interface Run {
  readonly commands: ReadonlyArray<LedgerCommand>
  readonly decisions: ReadonlyArray<Decision>
  readonly events: ReadonlyArray<LedgerEvent>
  readonly states: ReadonlyArray<AccountState>
  readonly final: AccountState
  readonly model: Model
}

/**
 * Applies the commands with decide + evolve and checks, after every command, that the decider answered what the
 * model expects and that the live state equals the model; the properties below then read the run.
 */
const run = (commands: ReadonlyArray<LedgerCommand>): Run => {
  const model: Model = {
    exists: false,
    deposited: 0n,
    captured: 0n,
    held: 0n,
    references: new Map(),
    holds: new Map(),
    keys: new Map()
  }
  let state = initialState(ACCOUNT)
  const decisions: Array<Decision> = []
  const events: Array<LedgerEvent> = []
  const states: Array<AccountState> = []
  for (const command of commands) {
    const expected = expectedOutcome(model, command)
    const decision = decide(state, command)
    decisions.push(decision)
    assert.strictEqual(decision._tag === "Accepted" ? "Accepted" : decision.rejection._tag, expected)
    if (decision._tag === "Accepted") {
      // (6) the key's spend + held never exceeds its limit at the moment a hold is accepted
      if (command.type === "PlaceHold" && command.keyId !== null && command.keySpendLimit !== null) {
        const spend = model.keys.get(command.keyId) ?? { spent: 0n, held: 0n }
        assert.isTrue(spend.spent + spend.held + command.amount <= command.keySpendLimit)
      }
      advance(model, command)
      for (const event of decision.events) {
        state = evolve(state, event)
        events.push(event)
      }
    }
    states.push(state)
    assert.strictEqual(state.deposited, model.deposited)
    assert.strictEqual(state.captured, model.captured)
    assert.strictEqual(state.held, model.held)
    for (const [keyId, spend] of model.keys) assert.deepStrictEqual(state.keys.get(keyId), spend, keyId)
  }
  return { commands, decisions, events, states, final: state, model }
}

const eventsOfHold = (events: ReadonlyArray<LedgerEvent>, holdId: string) =>
  events.filter((e) => e.type !== "AccountOpened" && e.type !== "FundsDeposited" && e.data.holdId === holdId)

const NUM_RUNS = 300

describe("LedgerAccount properties (random command sequences)", () => {
  it("the decider agrees with an independent model of the rules", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        run(commands)
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(1) a hold resolves exactly once; later resolutions are rejected", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { decisions, events, model } = run(commands)
        for (const holdId of model.holds.keys()) {
          const resolutions = eventsOfHold(events, holdId).filter(
            (e) => e.type === "UsageRecalculated" || (e.type === "RefundIssued" && e.data.reason !== "unused")
          )
          assert.isAtMost(resolutions.length, 1, holdId)
          assert.strictEqual(eventsOfHold(events, holdId).filter((e) => e.type === "HoldPlaced").length, 1)
        }
        const resolved = new Set<string>()
        commands.forEach((command, i) => {
          if (command.type !== "SettleHold" && command.type !== "ReleaseHold") return
          const decision = decisions[i]
          if (resolved.has(command.holdId)) {
            assert.strictEqual(decision._tag, "Rejected")
            if (decision._tag === "Rejected") assert.strictEqual(decision.rejection._tag, "HoldNotPending")
          }
          if (decision._tag === "Accepted") resolved.add(command.holdId)
        })
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(2) capture ≤ hold and refund = hold − capture for every settled hold", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { events, final } = run(commands)
        for (const hold of final.holds.values()) {
          const own = eventsOfHold(events, hold.holdId)
          const usage = own.find((e) => e.type === "UsageRecalculated")
          const refunds = own.flatMap((e) => (e.type === "RefundIssued" ? [amountOf(e.data.amount)] : []))
          const refunded = refunds.reduce((a, b) => a + b, 0n)
          assert.isAtMost(refunds.length, 1)
          assert.strictEqual(refunded, hold.refunded)
          if (hold.status === "settled") {
            assert.isDefined(usage)
            if (usage?.type !== "UsageRecalculated") continue
            const captured = amountOf(usage.data.captured)
            const cost = amountOf(usage.data.cost)
            assert.isTrue(captured <= hold.amount)
            assert.strictEqual(captured, min(cost, hold.amount))
            assert.strictEqual(refunded, hold.amount - captured)
            const overage = own.find((e) => e.type === "OverageCharged")
            if (cost > hold.amount) {
              assert.isDefined(overage)
              if (overage?.type === "OverageCharged") {
                assert.strictEqual(
                  amountOf(overage.data.amount) + amountOf(overage.data.uncollected),
                  cost - hold.amount
                )
                assert.strictEqual(hold.captured, captured + amountOf(overage.data.amount))
              }
            } else {
              assert.isUndefined(overage)
              assert.strictEqual(hold.captured, captured)
            }
          }
        }
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(3) available never goes below zero and held never below zero, after any command", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { states } = run(commands)
        for (const state of states) {
          assert.isTrue(available(state) >= 0n, `available ${available(state)}`)
          assert.isTrue(state.held >= 0n)
          assert.isTrue(state.captured >= 0n)
          const pending = [...state.holds.values()].filter((h) => h.status === "pending")
          assert.strictEqual(
            state.held,
            pending.reduce((sum, h) => sum + h.amount, 0n)
          )
          for (const spend of state.keys.values()) assert.isTrue(spend.held >= 0n && spend.spent >= 0n)
        }
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(4) released (failed, rejected, expired, cancelled) holds cost nothing", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { events, final } = run(commands)
        for (const hold of final.holds.values()) {
          if (hold.status !== "released") continue
          assert.strictEqual(hold.captured, 0n)
          assert.strictEqual(hold.refunded, hold.amount)
          const own = eventsOfHold(events, hold.holdId)
          assert.deepStrictEqual(
            own.map((e) => e.type),
            ["HoldPlaced", "RefundIssued"]
          )
        }
        // Everything captured comes from settled holds alone.
        const settledCapture = [...final.holds.values()]
          .filter((h) => h.status === "settled")
          .reduce((sum, h) => sum + h.captured, 0n)
        assert.strictEqual(final.captured, settledCapture)
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(5) replaying the produced events from the initial state gives the live state (replay = live)", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { events, final } = run(commands)
        const replayed = fold(initialState(ACCOUNT), events)
        assert.deepStrictEqual(replayed, final)
        // Events survive a JSON round trip (they are stored as jsonb) and still fold to the same state.
        const stored = JSON.parse(JSON.stringify(events)) as ReadonlyArray<LedgerEvent>
        assert.deepStrictEqual(fold(initialState(ACCOUNT), stored), final)
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(6) a key's spent + held never exceeds its limit when a hold is accepted", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { decisions } = run(commands)
        let state = initialState(ACCOUNT)
        commands.forEach((command, i) => {
          const decision = decisions[i]
          if (
            decision._tag === "Accepted" &&
            command.type === "PlaceHold" &&
            command.keyId !== null &&
            command.keySpendLimit !== null
          ) {
            const before = state.keys.get(command.keyId) ?? { spent: 0n, held: 0n }
            assert.isTrue(before.spent + before.held + command.amount <= command.keySpendLimit)
            const after = fold(state, decision.events).keys.get(command.keyId) as { spent: bigint; held: bigint }
            assert.isTrue(after.spent + after.held <= command.keySpendLimit)
          }
          if (decision._tag === "Accepted") state = fold(state, decision.events)
        })
      }),
      { numRuns: NUM_RUNS }
    )
  })

  it("(7) every total stays within a 64-bit integer, whatever is deposited", () => {
    fc.assert(
      fc.property(sequenceArb, (commands) => {
        const { states } = run(commands)
        for (const state of states) {
          for (const total of [state.deposited, state.captured, state.held]) assert.isTrue(total <= MAX_MICROS)
          for (const spend of state.keys.values()) assert.isTrue(spend.spent + spend.held <= MAX_MICROS)
        }
      }),
      { numRuns: NUM_RUNS }
    )
  })
})
