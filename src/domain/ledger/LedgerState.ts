/**
 * What the account decider reads and answers in: an account's state (balances, holds, keys' spend), the commands it
 * decides, the rejections it can give, and its decision.
 */
import type { Micros } from "../Money.ts"
import type { LedgerEvent, RefundReason } from "./LedgerEvent.ts"

export type HoldStatus = "pending" | "settled" | "released"

export interface HoldState {
  readonly holdId: string
  readonly accountId: string
  readonly keyId: string | null
  readonly amount: Micros
  readonly status: HoldStatus
  readonly captured: Micros
  readonly refunded: Micros
  readonly model: string | null
  readonly plugin: string | null
  readonly requestId: string | null
  readonly expiresAt: string | null
  readonly placedAt: string
  readonly resolvedAt: string | null
}

export interface KeySpend {
  readonly spent: Micros
  readonly held: Micros
}

/** What every fold of an account's stream keeps: whether it was opened, its name, and its three running figures. */
export interface AccountFigures {
  readonly exists: boolean
  readonly name: string
  readonly createdAt: string | null
  readonly deposited: Micros
  readonly captured: Micros
  readonly held: Micros
}

export interface AccountState extends AccountFigures {
  readonly accountId: string
  /** Holds known to this state: all of them on replay, the ones a batch touches in the writer. */
  readonly holds: ReadonlyMap<string, HoldState>
  /** Spend per key known to this state (same partial-loading rule as holds). */
  readonly keys: ReadonlyMap<string, KeySpend>
  /** Deposit references known to this state, for idempotent deposits. */
  readonly depositReferences: ReadonlyMap<string, Micros>
}

export const available = (state: Pick<AccountState, "deposited" | "captured" | "held">): Micros =>
  state.deposited - state.captured - state.held

export const initialState = (accountId: string): AccountState => ({
  accountId,
  exists: false,
  name: "",
  createdAt: null,
  deposited: 0n,
  captured: 0n,
  held: 0n,
  holds: new Map(),
  keys: new Map(),
  depositReferences: new Map()
})

export type LedgerCommand =
  | { readonly type: "OpenAccount"; readonly accountId: string; readonly name: string; readonly at: string }
  | {
      readonly type: "Deposit"
      readonly accountId: string
      readonly amount: Micros
      readonly reference: string
      readonly at: string
    }
  | {
      readonly type: "PlaceHold"
      readonly accountId: string
      readonly holdId: string
      readonly amount: Micros
      readonly keyId: string | null
      /** The key's spend limit, when it has one: spent + held + amount must stay within it. */
      readonly keySpendLimit: Micros | null
      readonly model: string | null
      readonly plugin: string | null
      readonly requestId: string | null
      readonly expiresAt: string | null
      readonly at: string
    }
  | {
      readonly type: "SettleHold"
      readonly accountId: string
      readonly holdId: string
      readonly cost: Micros
      readonly usage: unknown
      readonly at: string
    }
  | {
      readonly type: "ReleaseHold"
      readonly accountId: string
      readonly holdId: string
      readonly reason: RefundReason
      readonly at: string
    }

export type LedgerRejection =
  | { readonly _tag: "AccountNotFound"; readonly accountId: string }
  | { readonly _tag: "AccountAlreadyExists"; readonly accountId: string }
  | { readonly _tag: "InvalidAmount"; readonly message: string }
  | { readonly _tag: "InsufficientBalance"; readonly available: Micros; readonly requested: Micros }
  | { readonly _tag: "SpendLimitExceeded"; readonly limit: Micros; readonly used: Micros; readonly requested: Micros }
  | { readonly _tag: "HoldNotFound"; readonly holdId: string }
  | { readonly _tag: "HoldAlreadyExists"; readonly holdId: string }
  | { readonly _tag: "HoldNotPending"; readonly holdId: string; readonly status: HoldStatus }
  | { readonly _tag: "DepositReferenceReused"; readonly reference: string; readonly amount: Micros }

export type Decision =
  | { readonly _tag: "Accepted"; readonly events: ReadonlyArray<LedgerEvent>; readonly duplicate: boolean }
  | { readonly _tag: "Rejected"; readonly rejection: LedgerRejection }
