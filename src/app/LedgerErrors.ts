import { Schema } from "effect"

export const LedgerRejectionReason = Schema.Literals([
  "AccountNotFound",
  "AccountAlreadyExists",
  "InvalidAmount",
  "InsufficientBalance",
  "SpendLimitExceeded",
  "HoldNotFound",
  "HoldAlreadyExists",
  "HoldNotPending",
  "DepositReferenceReused"
])

/** A ledger command the rules refused; nothing was written. */
export class LedgerRejected extends Schema.TaggedError<LedgerRejected>()("LedgerRejected", {
  reason: LedgerRejectionReason,
  message: Schema.String
}) {}
