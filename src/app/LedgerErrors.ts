import { Schema } from "effect"
import { formatMicros } from "../domain/Money.ts"
import type { LedgerRejection } from "../domain/ledger/LedgerState.ts"

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

/** A rejection as the sentence a client or an operator reads. */
export const describeRejection = (rejection: LedgerRejection): string => {
  switch (rejection._tag) {
    case "AccountNotFound":
      return `account ${rejection.accountId} does not exist`
    case "AccountAlreadyExists":
      return `account ${rejection.accountId} already exists`
    case "InvalidAmount":
      return rejection.message
    case "InsufficientBalance":
      return `insufficient balance: ${formatMicros(rejection.requested)} is needed for this request and ${formatMicros(rejection.available)} is available`
    case "SpendLimitExceeded":
      return `this key's spend limit of ${formatMicros(rejection.limit)} would be exceeded: ${formatMicros(rejection.used)} is already spent or held and this request needs ${formatMicros(rejection.requested)}`
    case "HoldNotFound":
      return `hold ${rejection.holdId} does not exist`
    case "HoldAlreadyExists":
      return `hold ${rejection.holdId} already exists`
    case "HoldNotPending":
      return `hold ${rejection.holdId} is already ${rejection.status}`
    case "DepositReferenceReused":
      return `reference ${rejection.reference} was already used for a deposit of ${formatMicros(rejection.amount)}; a retry must repeat the same amount`
  }
}

export const toLedgerError = (rejection: LedgerRejection): LedgerRejected =>
  new LedgerRejected({ reason: rejection._tag, message: describeRejection(rejection) })
