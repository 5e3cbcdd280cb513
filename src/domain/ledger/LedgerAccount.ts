/**
 * The account decider: `decide(state, command)` checks every ledger rule and returns the events to append, `evolve`
 * folds one event into the state. Both are pure; the writer runs them on a partially loaded state (only the holds and
 * keys a batch touches) and replay runs them on the full history, so live projections and replay agree by
 * construction.
 *
 * Rules (docs/ledger.md): a hold resolves exactly once; capture ≤ hold and refund = hold − capture; `available`
 * never goes below zero (checked when a hold is placed); failed or rejected requests cost nothing (release refunds
 * the whole hold); an expired hold is released exactly once; every total stays within a 64-bit integer (deposits
 * are bounded, and every other total is bounded by them).
 */
import { formatMicros, MAX_MICROS, min } from "../Money.ts"
import { amountOf, applyBalanceMove } from "./BalanceMove.ts"
import type { LedgerEvent } from "./LedgerEvent.ts"
import { usageMetrics } from "./UsageMetrics.ts"
import {
  type AccountState,
  type Decision,
  type HoldState,
  type KeySpend,
  type LedgerCommand,
  type LedgerRejection,
  available
} from "./LedgerState.ts"

const accept = (events: ReadonlyArray<LedgerEvent>, duplicate = false): Decision => ({
  _tag: "Accepted",
  events,
  duplicate
})
const reject = (rejection: LedgerRejection): Decision => ({ _tag: "Rejected", rejection })

export const decide = (state: AccountState, command: LedgerCommand): Decision => {
  if (command.type === "OpenAccount") {
    if (state.exists) return reject({ _tag: "AccountAlreadyExists", accountId: command.accountId })
    return accept([
      { type: "AccountOpened", data: { accountId: command.accountId, name: command.name, at: command.at } }
    ])
  }
  if (!state.exists) return reject({ _tag: "AccountNotFound", accountId: command.accountId })
  const amount =
    command.type === "Deposit" || command.type === "PlaceHold"
      ? command.amount
      : command.type === "SettleHold"
        ? command.cost
        : 0n
  if (amount > MAX_MICROS) {
    return reject({
      _tag: "InvalidAmount",
      message: `amount exceeds the ledger's maximum of ${formatMicros(MAX_MICROS)}`
    })
  }
  switch (command.type) {
    case "Deposit":
      return deposit(state, command)
    case "PlaceHold":
      return placeHold(state, command)
    case "SettleHold":
      return settleHold(state, command)
    case "ReleaseHold":
      return releaseHold(state, command)
  }
}

type CommandOf<T extends LedgerCommand["type"]> = Extract<LedgerCommand, { readonly type: T }>

/** A deposit: positive, within the ledger's maximum, and once per reference (a retry is answered as the first). */
const deposit = (state: AccountState, command: CommandOf<"Deposit">): Decision => {
  const accountId = state.accountId
  if (command.amount <= 0n) return reject({ _tag: "InvalidAmount", message: "amount must be greater than zero" })
  const earlier = state.depositReferences.get(command.reference)
  if (earlier !== undefined) {
    // Same reference, same amount: a retry, answered as the original. Another amount: a mistake worth a 409.
    if (earlier === command.amount) return accept([], true)
    return reject({ _tag: "DepositReferenceReused", reference: command.reference, amount: earlier })
  }
  if (state.deposited + command.amount > MAX_MICROS) {
    // Every balance column is a 64-bit integer: a total past it could not be stored.
    return reject({
      _tag: "InvalidAmount",
      message: `this deposit would take the account's deposits past the ledger's maximum of ${formatMicros(MAX_MICROS)}`
    })
  }
  return accept([
    {
      type: "FundsDeposited",
      data: { accountId, amount: formatMicros(command.amount), reference: command.reference, at: command.at }
    }
  ])
}

/** A hold: within what the account has available and what the key may still spend. */
const placeHold = (state: AccountState, command: CommandOf<"PlaceHold">): Decision => {
  const accountId = state.accountId
  if (command.amount < 0n) return reject({ _tag: "InvalidAmount", message: "a hold cannot be negative" })
  if (state.holds.has(command.holdId)) return reject({ _tag: "HoldAlreadyExists", holdId: command.holdId })
  const free = available(state)
  if (command.amount > free) {
    return reject({ _tag: "InsufficientBalance", available: free, requested: command.amount })
  }
  if (command.keyId !== null && command.keySpendLimit !== null) {
    const spend = state.keys.get(command.keyId) ?? { spent: 0n, held: 0n }
    const used = spend.spent + spend.held
    if (used + command.amount > command.keySpendLimit) {
      return reject({
        _tag: "SpendLimitExceeded",
        limit: command.keySpendLimit,
        used,
        requested: command.amount
      })
    }
  }
  return accept([
    {
      type: "HoldPlaced",
      data: {
        accountId,
        holdId: command.holdId,
        amount: formatMicros(command.amount),
        keyId: command.keyId,
        model: command.model,
        plugin: command.plugin,
        requestId: command.requestId,
        expiresAt: command.expiresAt,
        at: command.at
      }
    }
  ])
}

/** A pending hold settled: its cost captured up to the hold, the rest refunded, an overage charged if it can be. */
const settleHold = (state: AccountState, command: CommandOf<"SettleHold">): Decision => {
  const accountId = state.accountId
  const hold = state.holds.get(command.holdId)
  if (hold === undefined) return reject({ _tag: "HoldNotFound", holdId: command.holdId })
  if (hold.status !== "pending") return reject({ _tag: "HoldNotPending", holdId: hold.holdId, status: hold.status })
  if (command.cost < 0n) return reject({ _tag: "InvalidAmount", message: "a cost cannot be negative" })
  const captured = min(command.cost, hold.amount)
  const events: Array<LedgerEvent> = [
    {
      type: "UsageRecalculated",
      data: {
        accountId,
        holdId: hold.holdId,
        cost: formatMicros(command.cost),
        captured: formatMicros(captured),
        usage: command.usage,
        metrics: usageMetrics(command.usage),
        at: command.at
      }
    }
  ]
  if (hold.amount > captured) {
    events.push({
      type: "RefundIssued",
      data: {
        accountId,
        holdId: hold.holdId,
        amount: formatMicros(hold.amount - captured),
        reason: "unused",
        at: command.at
      }
    })
  }
  if (command.cost > hold.amount) {
    // Availability after this hold is resolved: the capture and the hold's own release cancel out.
    const free = available(state)
    const overage = command.cost - hold.amount
    const charged = min(overage, free > 0n ? free : 0n)
    events.push({
      type: "OverageCharged",
      data: {
        accountId,
        holdId: hold.holdId,
        amount: formatMicros(charged),
        uncollected: formatMicros(overage - charged),
        at: command.at
      }
    })
  }
  return accept(events)
}

/** A pending hold released in full: nothing was delivered. */
const releaseHold = (state: AccountState, command: CommandOf<"ReleaseHold">): Decision => {
  const accountId = state.accountId
  const hold = state.holds.get(command.holdId)
  if (hold === undefined) return reject({ _tag: "HoldNotFound", holdId: command.holdId })
  if (hold.status !== "pending") return reject({ _tag: "HoldNotPending", holdId: hold.holdId, status: hold.status })
  return accept([
    {
      type: "RefundIssued",
      data: {
        accountId,
        holdId: hold.holdId,
        amount: formatMicros(hold.amount),
        reason: command.reason,
        at: command.at
      }
    }
  ])
}

const withKey = (
  keys: ReadonlyMap<string, KeySpend>,
  keyId: string | null,
  change: (spend: KeySpend) => KeySpend
): ReadonlyMap<string, KeySpend> => {
  if (keyId === null) return keys
  const next = new Map(keys)
  next.set(keyId, change(keys.get(keyId) ?? { spent: 0n, held: 0n }))
  return next
}

const withHold = (holds: ReadonlyMap<string, HoldState>, hold: HoldState): ReadonlyMap<string, HoldState> => {
  const next = new Map(holds)
  next.set(hold.holdId, hold)
  return next
}

/** The pending hold a `HoldPlaced` event opens. */
const placedHold = (event: Extract<LedgerEvent, { readonly type: "HoldPlaced" }>): HoldState => ({
  holdId: event.data.holdId,
  accountId: event.data.accountId,
  keyId: event.data.keyId,
  amount: amountOf(event.data.amount),
  status: "pending",
  captured: 0n,
  refunded: 0n,
  model: event.data.model,
  plugin: event.data.plugin,
  requestId: event.data.requestId,
  expiresAt: event.data.expiresAt,
  placedAt: event.data.at,
  resolvedAt: null
})

/**
 * Folds one event. Unknown holds are tolerated (the writer loads only what a batch touches); the balance fields are
 * always complete because every event of the stream is folded into them.
 */
export const evolve = (state: AccountState, event: LedgerEvent): AccountState => {
  const moved = applyBalanceMove(state, event)
  switch (event.type) {
    case "AccountOpened":
      return { ...moved, exists: true, name: event.data.name, createdAt: event.data.at }
    case "FundsDeposited": {
      const depositReferences = new Map(state.depositReferences)
      depositReferences.set(event.data.reference, amountOf(event.data.amount))
      return { ...moved, depositReferences }
    }
    case "HoldPlaced": {
      const hold = placedHold(event)
      return {
        ...moved,
        holds: withHold(state.holds, hold),
        keys: withKey(state.keys, hold.keyId, (s) => ({ spent: s.spent, held: s.held + hold.amount }))
      }
    }
    case "UsageRecalculated": {
      const captured = amountOf(event.data.captured)
      const hold = state.holds.get(event.data.holdId)
      const holds =
        hold === undefined
          ? state.holds
          : withHold(state.holds, { ...hold, status: "settled", captured, resolvedAt: event.data.at })
      return {
        ...moved,
        holds,
        keys: withKey(state.keys, hold?.keyId ?? null, (s) => ({ spent: s.spent + captured, held: s.held - captured }))
      }
    }
    case "OverageCharged": {
      const amount = amountOf(event.data.amount)
      const hold = state.holds.get(event.data.holdId)
      const holds =
        hold === undefined ? state.holds : withHold(state.holds, { ...hold, captured: hold.captured + amount })
      return {
        ...moved,
        holds,
        keys: withKey(state.keys, hold?.keyId ?? null, (s) => ({ spent: s.spent + amount, held: s.held }))
      }
    }
    case "RefundIssued": {
      const amount = amountOf(event.data.amount)
      const hold = state.holds.get(event.data.holdId)
      const holds =
        hold === undefined
          ? state.holds
          : withHold(state.holds, {
              ...hold,
              status: hold.status === "pending" ? "released" : hold.status,
              refunded: hold.refunded + amount,
              resolvedAt: hold.resolvedAt ?? event.data.at
            })
      return {
        ...moved,
        holds,
        keys: withKey(state.keys, hold?.keyId ?? null, (s) => ({ spent: s.spent, held: s.held - amount }))
      }
    }
  }
}

export const fold = (state: AccountState, events: Iterable<LedgerEvent>): AccountState => {
  let current = state
  for (const event of events) current = evolve(current, event)
  return current
}
