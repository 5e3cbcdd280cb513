/**
 * Ledger assertions for the chat tests: every request left one `HoldPlaced` (key, model, request id) and its
 * resolution, priced from the usage the client saw at the sim catalog's prices (input 0.15, output 0.60 USD per 1M
 * tokens, each rounded up to the micro-dollar).
 */
import { assert } from "@effect/vitest"
import { formatMicros, min, parseDecimal } from "../../../src/domain/Money.ts"
import type { Admin, Customer, LedgerEntry } from "./ChatHarness.ts"

export interface Tokens {
  readonly input: number
  readonly output: number
}

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b

/** The sim price of `tokens`, as the ledger writes it. */
export const priceOf = (tokens: Tokens): string =>
  formatMicros(
    ceilDiv(BigInt(tokens.input) * 150_000n, 1_000_000n) + ceilDiv(BigInt(tokens.output) * 600_000n, 1_000_000n)
  )

export type Outcome =
  /** Settled from usage the client saw. */
  | { readonly _tag: "Usage"; readonly tokens: Tokens }
  /** Settled from usage the client did not see (a stream without include_usage): the price of the recorded usage. */
  | { readonly _tag: "Settled" }
  /** Settled for what was delivered, counted by the tokenizer: exactly `tokens`. */
  | { readonly _tag: "Delivered"; readonly tokens: Tokens }
  /** Nothing delivered: the whole hold released with this reason. */
  | { readonly _tag: "Released"; readonly reason: string }

export interface Expected {
  /** The gateway's `x-request-id`; undefined when the client could not see it. */
  readonly requestId: string | undefined
  readonly model: string
  readonly outcome: Outcome
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const resolved = (entries: ReadonlyArray<LedgerEntry>) => {
  const holds = entries.filter((e) => e.type === "HoldPlaced")
  return holds.every((hold) =>
    entries.some((e) => e.holdId === hold.holdId && (e.type === "RefundIssued" || e.type === "UsageRecalculated"))
  )
}

/** The account's ledger once every hold is resolved (stream settlements land just after the last byte). */
export const settledLedger = async (admin: Admin, accountId: string): Promise<ReadonlyArray<LedgerEntry>> => {
  for (let attempt = 0; ; attempt++) {
    const entries = await admin.ledger(accountId)
    if (resolved(entries) || attempt >= 40) return entries
    await sleep(50)
  }
}

/** Asserts the account's holds are exactly `expected`, in order, each resolved as described. */
export const assertBilled = async (
  admin: Admin,
  customer: Customer,
  expected: ReadonlyArray<Expected>
): Promise<ReadonlyArray<LedgerEntry>> => {
  const entries = await settledLedger(admin, customer.accountId)
  const holds = entries.filter((e) => e.type === "HoldPlaced")
  assert.strictEqual(holds.length, expected.length, `holds: ${JSON.stringify(entries.map((e) => e.type))}`)
  expected.forEach((want, index) => {
    const hold = holds[index]
    const label = `request ${index} (${want.model}, ${want.outcome._tag})`
    assert.strictEqual(hold.keyId, customer.keyId, label)
    assert.strictEqual(hold.model, want.model, label)
    assert.match(hold.requestId ?? "", /^req_[0-9a-f]{32}$/, label)
    if (want.requestId !== undefined) assert.strictEqual(hold.requestId, want.requestId, label)
    const held = parseDecimal(hold.amount ?? "") as bigint
    const after = entries.filter((e) => e.holdId === hold.holdId && e.type !== "HoldPlaced")
    const usage = after.find((e) => e.type === "UsageRecalculated")
    const refund = after.find((e) => e.type === "RefundIssued")
    const outcome = want.outcome
    if (outcome._tag === "Released") {
      assert.isUndefined(usage, `${label}: nothing may be captured`)
      assert.strictEqual(refund?.amount, hold.amount, `${label}: the whole hold goes back`)
      assert.strictEqual(refund?.data.reason, outcome.reason, label)
      return
    }
    assert.isDefined(usage, `${label}: ${JSON.stringify(after)}`)
    const recorded = usage?.data.usage as Record<string, number> & { estimated?: boolean }
    const cost =
      outcome._tag === "Settled"
        ? priceOf({
            input: recorded.inputTokens + recorded.cacheReadTokens + recorded.cacheWriteTokens,
            output: recorded.outputTokens
          })
        : priceOf(outcome.tokens)
    assert.strictEqual(usage?.data.cost, cost, `${label}: usage ${JSON.stringify(recorded)}`)
    if (outcome._tag === "Delivered") assert.isTrue(recorded.estimated, `${label}: marked estimated`)
    const captured = parseDecimal(String(usage?.data.captured)) as bigint
    const costMicros = parseDecimal(cost) as bigint
    assert.strictEqual(captured, min(costMicros, held), label)
    if (captured < held) {
      assert.strictEqual(refund?.amount, formatMicros(held - captured), `${label}: the rest is refunded`)
      assert.strictEqual(refund?.data.reason, "unused", label)
    } else assert.isUndefined(refund, label)
  })
  const balance = await admin.balance(customer.accountId)
  assert.strictEqual(balance.held, "0.000000", "no hold left pending")
  return entries
}

/** The recorded cost of the i-th hold of the account. */
export const costs = (entries: ReadonlyArray<LedgerEntry>): ReadonlyArray<string> =>
  entries.filter((e) => e.type === "UsageRecalculated").map((e) => String(e.data.cost))
