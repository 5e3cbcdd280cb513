/**
 * The admin API's answers as the CLI reads them. The schemas are tolerant on purpose: unknown fields pass through
 * (`--json` prints the raw body anyway), and fields the CLI only displays may be missing or null.
 */
import { Schema } from "effect"

const Text = Schema.String
const OptionalText = Schema.optional(Schema.NullOr(Schema.String))
/** Positions and cursors are integers, but a server may send a 64-bit one as a string. */
const Position = Schema.Union([Schema.Number, Schema.String])

export const Balance = Schema.Struct({
  deposited: Text,
  captured: Text,
  held: Text,
  available: Text
})
export type Balance = typeof Balance.Type

export const AccountCreated = Schema.Struct({
  id: Text,
  name: Text,
  createdAt: OptionalText
})
export type AccountCreated = typeof AccountCreated.Type

export const AccountDetails = Schema.Struct({
  id: Text,
  name: Text,
  createdAt: OptionalText,
  balance: Balance
})
export type AccountDetails = typeof AccountDetails.Type

export const AccountSummary = Schema.Struct({
  id: Text,
  name: Text,
  createdAt: OptionalText,
  balance: Schema.optional(Schema.NullOr(Schema.Union([Text, Balance])))
})
export type AccountSummary = typeof AccountSummary.Type

export const AccountList = Schema.Struct({ data: Schema.Array(AccountSummary) })
export type AccountList = typeof AccountList.Type

export const DepositRecorded = Schema.Struct({
  accountId: Text,
  amount: Text,
  reference: Text,
  balance: Schema.optional(Balance)
})
export type DepositRecorded = typeof DepositRecorded.Type

const Models = Schema.optional(Schema.NullOr(Schema.Array(Text)))

export const KeyCreated = Schema.Struct({
  id: Text,
  key: Text,
  name: Text,
  accountId: Text,
  createdAt: OptionalText,
  models: Models,
  expiresAt: OptionalText,
  spendLimit: OptionalText
})
export type KeyCreated = typeof KeyCreated.Type

export const KeySummary = Schema.Struct({
  id: Text,
  name: Text,
  accountId: OptionalText,
  prefix: OptionalText,
  createdAt: OptionalText,
  lastUsedAt: OptionalText,
  expiresAt: OptionalText,
  models: Models,
  spendLimit: OptionalText,
  spent: OptionalText,
  revokedAt: OptionalText
})
export type KeySummary = typeof KeySummary.Type

export const KeyList = Schema.Struct({ data: Schema.Array(KeySummary) })
export type KeyList = typeof KeyList.Type

export const KeyRevoked = Schema.Struct({ id: Text, revokedAt: OptionalText })
export type KeyRevoked = typeof KeyRevoked.Type

export const LedgerEntry = Schema.Struct({
  position: Position,
  type: Text,
  amount: OptionalText,
  holdId: OptionalText,
  requestId: OptionalText,
  keyId: OptionalText,
  model: OptionalText,
  at: OptionalText
})
export type LedgerEntry = typeof LedgerEntry.Type

export const LedgerPage = Schema.Struct({
  data: Schema.Array(LedgerEntry),
  next: Schema.optional(Schema.NullOr(Position))
})
export type LedgerPage = typeof LedgerPage.Type

export const ReplayReport = Schema.Struct({
  ok: Schema.Boolean,
  events: Schema.optional(Schema.Number),
  accounts: Schema.optional(Schema.Number),
  mismatches: Schema.optional(Schema.Array(Schema.Unknown))
})
export type ReplayReport = typeof ReplayReport.Type

export const AdminBatch = Schema.Struct({
  id: Text,
  accountId: OptionalText,
  keyId: OptionalText,
  surface: OptionalText,
  endpoint: OptionalText,
  status: Text,
  requestCounts: Schema.Struct({
    total: Schema.Number,
    completed: Schema.Number,
    failed: Schema.Number,
    pending: Schema.optional(Schema.Number)
  }),
  charged: OptionalText,
  held: OptionalText,
  refunded: OptionalText,
  createdAt: OptionalText,
  expiresAt: OptionalText,
  endedAt: OptionalText,
  outputFileId: OptionalText,
  errorFileId: OptionalText,
  error: OptionalText
})
export type AdminBatch = typeof AdminBatch.Type

export const AdminBatchList = Schema.Struct({
  data: Schema.Array(AdminBatch),
  last_id: OptionalText,
  has_more: Schema.optional(Schema.NullOr(Schema.Boolean))
})
export type AdminBatchList = typeof AdminBatchList.Type

export interface BatchListQuery {
  readonly accountId?: string | undefined
  readonly status?: string | undefined
  readonly limit?: number | undefined
  readonly after?: string | undefined
}

export const ErrorEnvelope = Schema.Struct({
  error: Schema.Struct({
    message: Text,
    type: OptionalText,
    param: OptionalText,
    code: OptionalText
  })
})

export interface KeyRequest {
  readonly name: string
  readonly models?: ReadonlyArray<string>
  readonly expiresAt?: string
  readonly spendLimit?: string
}

export interface LedgerQuery {
  readonly after?: number | string | undefined
  readonly limit?: number | undefined
}
