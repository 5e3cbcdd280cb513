/**
 * The ledger's facts. Amounts travel as decimal strings ("1.250000") so the stored JSON is exact and readable by an
 * auditor; times are ISO 8601 instants. Every event of an account lives in the stream `account-<id>`.
 */
import type { UsageMetrics } from "./UsageMetrics.ts"

export type RefundReason = "unused" | "failed" | "rejected" | "expired" | "cancelled"

export interface AccountOpened {
  readonly type: "AccountOpened"
  readonly data: { readonly accountId: string; readonly name: string; readonly at: string }
}

export interface FundsDeposited {
  readonly type: "FundsDeposited"
  readonly data: {
    readonly accountId: string
    readonly amount: string
    readonly reference: string
    readonly at: string
  }
}

export interface HoldPlaced {
  readonly type: "HoldPlaced"
  readonly data: {
    readonly accountId: string
    readonly holdId: string
    readonly amount: string
    readonly keyId: string | null
    readonly model: string | null
    readonly plugin: string | null
    readonly requestId: string | null
    /** null only for holds whose lifetime is governed by something else (a live video task's deadline). */
    readonly expiresAt: string | null
    readonly at: string
  }
}

/**
 * The actual cost from real usage; resolves the hold by capturing `min(cost, held)`. Schema version 2 added
 * `metrics` (version-1 events are upcast on read, see Upcast.ts).
 */
export interface UsageRecalculated {
  readonly type: "UsageRecalculated"
  readonly data: {
    readonly accountId: string
    readonly holdId: string
    readonly cost: string
    readonly captured: string
    readonly usage: unknown
    readonly metrics: UsageMetrics
    readonly at: string
  }
}

/** Cost above the hold, charged only as far as the available balance allows; the rest is written off, visibly. */
export interface OverageCharged {
  readonly type: "OverageCharged"
  readonly data: {
    readonly accountId: string
    readonly holdId: string
    readonly amount: string
    readonly uncollected: string
    readonly at: string
  }
}

/** The held amount that was not captured goes back: the remainder after settlement, or the whole hold. */
export interface RefundIssued {
  readonly type: "RefundIssued"
  readonly data: {
    readonly accountId: string
    readonly holdId: string
    readonly amount: string
    readonly reason: RefundReason
    readonly at: string
  }
}

export type LedgerEvent =
  | AccountOpened
  | FundsDeposited
  | HoldPlaced
  | UsageRecalculated
  | OverageCharged
  | RefundIssued

export const LEDGER_EVENT_TYPES: ReadonlyArray<LedgerEvent["type"]> = [
  "AccountOpened",
  "FundsDeposited",
  "HoldPlaced",
  "UsageRecalculated",
  "OverageCharged",
  "RefundIssued"
]

export const isLedgerEventType = (type: string): type is LedgerEvent["type"] =>
  (LEDGER_EVENT_TYPES as ReadonlyArray<string>).includes(type)
