/**
 * How one ledger event moves an account's three running figures: deposited, captured and held. Both folds of the
 * stream read it from here: the decider's state (LedgerAccount.ts `evolve`) and a statement's (app/Statements.ts).
 */
import { type Micros, parseDecimal } from "../Money.ts"
import type { LedgerEvent } from "./LedgerEvent.ts"

export interface BalanceMove {
  readonly deposited: Micros
  readonly captured: Micros
  readonly held: Micros
}

/** An event's decimal amount in micro-dollars; a malformed one is a corrupt event, a bug, and throws. */
export const amountOf = (text: string): Micros => {
  const value = parseDecimal(text)
  if (value === undefined) throw new Error(`ledger event carries a malformed amount: ${text}`)
  return value
}

const move = (deposited: Micros, captured: Micros, held: Micros): BalanceMove => ({ deposited, captured, held })

export const balanceMoveOf = (event: LedgerEvent): BalanceMove => {
  switch (event.type) {
    case "AccountOpened":
      return move(0n, 0n, 0n)
    case "FundsDeposited":
      return move(amountOf(event.data.amount), 0n, 0n)
    case "HoldPlaced":
      return move(0n, 0n, amountOf(event.data.amount))
    case "UsageRecalculated": {
      // The captured part of the hold leaves `held` for `captured`.
      const captured = amountOf(event.data.captured)
      return move(0n, captured, -captured)
    }
    case "OverageCharged":
      return move(0n, amountOf(event.data.amount), 0n)
    case "RefundIssued":
      return move(0n, 0n, -amountOf(event.data.amount))
  }
}

/** `state` with `event`'s move applied to its three figures. */
export const applyBalanceMove = <S extends BalanceMove>(state: S, event: LedgerEvent): S => {
  const m = balanceMoveOf(event)
  return {
    ...state,
    deposited: state.deposited + m.deposited,
    captured: state.captured + m.captured,
    held: state.held + m.held
  }
}
