/** Read side of accounts: balances, listings and the account's ledger, all from projections and the event store. */
import { Context, type Effect } from "effect"
import type { StoredEvent } from "./EventStore.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import type { StoreUnavailable } from "./StoreErrors.ts"

export interface AccountView {
  readonly id: string
  readonly name: string
  readonly createdAt: string
  readonly deposited: bigint
  readonly captured: bigint
  readonly held: bigint
  readonly version: bigint
}

export class Accounts extends Context.Service<
  Accounts,
  {
    readonly get: (accountId: string) => Effect.Effect<AccountView, LedgerRejected | StoreUnavailable>
    readonly list: (options: {
      readonly search?: string
      readonly limit: number
    }) => Effect.Effect<ReadonlyArray<AccountView>, StoreUnavailable>
    /** The account's events, oldest first, after a stream position. */
    readonly ledger: (
      accountId: string,
      after: bigint,
      limit: number
    ) => Effect.Effect<ReadonlyArray<StoredEvent>, LedgerRejected | StoreUnavailable>
  }
>()("tollgate/app/Accounts") {}
