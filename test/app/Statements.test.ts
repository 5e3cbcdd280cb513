import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  addBalances,
  type Balances,
  balancesOf,
  deltaOf,
  emptyStatementState,
  entryOf,
  evolveStatement,
  parseBound,
  type StatementEvent,
  type StatementState
} from "../../src/app/Statements.ts"
import { formatSignedMicros } from "../../src/domain/Money.ts"
import { usd } from "../support/Money.ts"
import { decide, evolve } from "../../src/domain/ledger/LedgerAccount.ts"
import { type AccountState, initialState, type LedgerCommand } from "../../src/domain/ledger/LedgerState.ts"
import type { LedgerEvent } from "../../src/domain/ledger/LedgerEvent.ts"

const ACCOUNT = "acc-1"
const AT = "2026-01-01T00:00:00.000Z"
const zero: Balances = { balance: 0n, held: 0n, available: 0n }

const run = (commands: ReadonlyArray<LedgerCommand>): ReadonlyArray<LedgerEvent> => {
  let state: AccountState = initialState(ACCOUNT)
  const events: Array<LedgerEvent> = []
  for (const command of commands) {
    const decision = decide(state, command)
    if (decision._tag !== "Accepted") continue
    for (const event of decision.events) {
      state = evolve(state, event)
      events.push(event)
    }
  }
  return events
}

const foldStatement = (events: ReadonlyArray<LedgerEvent>, state: StatementState = emptyStatementState) =>
  events.reduce(evolveStatement, state)

const row = (event: LedgerEvent, index: number): StatementEvent => ({
  globalPosition: BigInt(index + 100),
  streamPosition: BigInt(index + 1),
  recordedAt: AT,
  metadata: {},
  event
})

describe("Statements (pure)", () => {
  it("deltas: a deposit raises balance and available, a hold moves available to held, a settlement captures", () => {
    const events = run([
      { type: "OpenAccount", accountId: ACCOUNT, name: "acme", at: AT },
      { type: "Deposit", accountId: ACCOUNT, amount: usd("10"), reference: "r", at: AT },
      {
        type: "PlaceHold",
        accountId: ACCOUNT,
        holdId: "h1",
        amount: usd("1"),
        keyId: "k1",
        keySpendLimit: null,
        model: "sim-openai",
        plugin: "text",
        requestId: "req-1",
        expiresAt: null,
        at: AT
      },
      { type: "SettleHold", accountId: ACCOUNT, holdId: "h1", cost: usd("0.052"), usage: { tokens: 3 }, at: AT }
    ])
    assert.deepStrictEqual(
      events.map((e) => e.type),
      ["AccountOpened", "FundsDeposited", "HoldPlaced", "UsageRecalculated", "RefundIssued"]
    )
    const signed = (d: Balances) => [d.balance, d.held, d.available].map(formatSignedMicros)
    assert.deepStrictEqual(signed(deltaOf(events[0])), ["0.000000", "0.000000", "0.000000"])
    assert.deepStrictEqual(signed(deltaOf(events[1])), ["+10.000000", "0.000000", "+10.000000"])
    assert.deepStrictEqual(signed(deltaOf(events[2])), ["0.000000", "+1.000000", "-1.000000"])
    assert.deepStrictEqual(signed(deltaOf(events[3])), ["-0.052000", "-0.052000", "0.000000"])
    assert.deepStrictEqual(signed(deltaOf(events[4])), ["0.000000", "-0.948000", "+0.948000"])

    // Entries about a hold borrow key, model, plugin and request id from its HoldPlaced; resolved holds are dropped.
    const before = foldStatement(events.slice(0, 3))
    const usage = entryOf(before, row(events[3], 3))
    assert.strictEqual(usage.model, "sim-openai")
    assert.strictEqual(usage.plugin, "text")
    assert.strictEqual(usage.keyId, "k1")
    assert.strictEqual(usage.requestId, "req-1")
    assert.strictEqual(usage.amount, usd("0.052"))
    assert.deepStrictEqual(usage.usage, { tokens: 3 })
    const afterUsage = evolveStatement(before, events[3])
    assert.strictEqual(entryOf(afterUsage, row(events[4], 4)).model, "sim-openai")
    assert.strictEqual(foldStatement(events).holds.size, 0)
  })

  it("bounds: digits are a global position, anything else must be an ISO 8601 instant", () => {
    assert.deepStrictEqual(parseBound("42"), { _tag: "Position", position: 42n })
    assert.deepStrictEqual(parseBound("2026-01-31T01:00:00+01:00"), { _tag: "Instant", at: "2026-01-31T00:00:00.000Z" })
    assert.strictEqual(parseBound("yesterday"), undefined)
    assert.strictEqual(parseBound("2026-13-45T00:00:00Z"), undefined)
    assert.strictEqual(parseBound("-3"), undefined)
  })

  const amount = fc.bigInt({ min: 0n, max: usd("5") })
  const command = fc.oneof(
    fc.record({ kind: fc.constant("deposit" as const), amount: fc.bigInt({ min: 1n, max: usd("8") }) }),
    fc.record({ kind: fc.constant("hold" as const), amount, model: fc.constantFrom("m1", "m2", null) }),
    fc.record({ kind: fc.constant("settle" as const), hold: fc.nat(30), cost: fc.bigInt({ min: 0n, max: usd("7") }) }),
    fc.record({
      kind: fc.constant("release" as const),
      hold: fc.nat(30),
      reason: fc.constantFrom("failed" as const, "expired" as const)
    })
  )

  type Step = typeof command extends fc.Arbitrary<infer T> ? T : never

  const toCommands = (steps: ReadonlyArray<Step>) => {
    const commands: Array<LedgerCommand> = [{ type: "OpenAccount", accountId: ACCOUNT, name: "acme", at: AT }]
    let holds = 0
    steps.forEach((step, i) => {
      if (step.kind === "deposit") {
        commands.push({ type: "Deposit", accountId: ACCOUNT, amount: step.amount, reference: `d${i}`, at: AT })
      } else if (step.kind === "hold") {
        holds += 1
        commands.push({
          type: "PlaceHold",
          accountId: ACCOUNT,
          holdId: `h${holds}`,
          amount: step.amount,
          keyId: "k",
          keySpendLimit: null,
          model: step.model,
          plugin: "text",
          requestId: `req${holds}`,
          expiresAt: null,
          at: AT
        })
      } else if (step.kind === "settle") {
        commands.push({
          type: "SettleHold",
          accountId: ACCOUNT,
          holdId: `h${(step.hold % Math.max(holds, 1)) + 1}`,
          cost: step.cost,
          usage: { n: i },
          at: AT
        })
      } else {
        commands.push({
          type: "ReleaseHold",
          accountId: ACCOUNT,
          holdId: `h${(step.hold % Math.max(holds, 1)) + 1}`,
          reason: step.reason,
          at: AT
        })
      }
    })
    return commands
  }

  it("opening + Σ delta = closing for balance, held and available, over any range of any history", () => {
    fc.assert(
      fc.property(fc.array(command, { maxLength: 60 }), fc.nat(), fc.nat(), (steps, a, b) => {
        const events = run(toCommands(steps))
        const i = a % (events.length + 1)
        const j = i + (b % (events.length - i + 1))
        const opening = foldStatement(events.slice(0, i))
        const closing = foldStatement(events.slice(i, j), opening)
        const sum = events.slice(i, j).map(deltaOf).reduce(addBalances, zero)
        assert.deepStrictEqual(addBalances(balancesOf(opening), sum), balancesOf(closing))
        // The bounded fold agrees with the decider's own fold on every figure.
        const full = events.slice(0, j).reduce(evolve, initialState(ACCOUNT))
        assert.deepStrictEqual(balancesOf(closing), balancesOf(full))
        assert.isTrue(balancesOf(closing).available >= 0n)
        // Bounded: only pending holds are kept once every command's events are in.
        const pending = [...foldStatement(events).holds.keys()].sort()
        const expected = [...events.reduce(evolve, initialState(ACCOUNT)).holds.values()]
          .filter((h) => h.status === "pending")
          .map((h) => h.holdId)
          .sort()
        assert.deepStrictEqual(pending, expected)
        // Every entry about a known hold names that hold's model.
        let state = emptyStatementState
        events.forEach((event, index) => {
          const entry = entryOf(state, row(event, index))
          if (event.type !== "AccountOpened" && event.type !== "FundsDeposited") {
            const placed = events.find((e) => e.type === "HoldPlaced" && e.data.holdId === entry.holdId)
            assert.strictEqual(entry.model, placed?.type === "HoldPlaced" ? placed.data.model : "missing")
          }
          state = evolveStatement(state, event)
        })
      }),
      { numRuns: 300 }
    )
  })
})
