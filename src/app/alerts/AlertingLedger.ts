/**
 * Notices the ledger's alert-worthy moments for `Alerts`: the Ledger, decorated. After a delivered call settles, the
 * account's balance as the writer committed it (noted on the request's telemetry) is checked against low-balance
 * thresholds; a hold refused for its key's spend limit raises `key.spend_limit_reached`. Everything else passes
 * through untouched, and an alert that cannot be queued never fails the call.
 */
import { Effect, Layer } from "effect"
import { formatMicros } from "../../domain/Money.ts"
import { Ledger, type PlaceHoldInput } from "../Ledger.ts"
import type { LedgerRejected } from "../LedgerErrors.ts"
import type { StoreRefused, StoreUnavailable } from "../StoreErrors.ts"
import { CurrentTelemetry } from "../RequestTelemetry.ts"
import { Alerts } from "./Alerts.ts"

export const layer = Layer.effect(
  Ledger,
  Effect.gen(function* () {
    const ledger = yield* Ledger
    const alerts = yield* Alerts
    const balanceAfter = (accountId: string) =>
      Effect.flatMap(CurrentTelemetry, (telemetry) =>
        telemetry.balance === undefined || telemetry.deposited === undefined
          ? Effect.void
          : alerts.balanceSeen(accountId, telemetry.balance, telemetry.deposited)
      )
    const spendLimitReached = (input: PlaceHoldInput) => (error: LedgerRejected | StoreUnavailable | StoreRefused) =>
      error._tag === "LedgerRejected" &&
      error.reason === "SpendLimitExceeded" &&
      input.keyId !== null &&
      input.keySpendLimit !== null
        ? alerts.raise({
            key: `key.spend_limit_reached:${input.keyId}:${input.keySpendLimit}`,
            type: "key.spend_limit_reached",
            accountId: input.accountId,
            data: { accountId: input.accountId, keyId: input.keyId, spendLimit: formatMicros(input.keySpendLimit) }
          })
        : Effect.void
    return Ledger.of({
      ...ledger,
      placeHold: (input) => Effect.tapError(ledger.placeHold(input), spendLimitReached(input)),
      placeHoldLingering: (input, onRefused, until) =>
        Effect.map(ledger.placeHoldLingering(input, onRefused, until), (pending) => ({
          ...pending,
          committed: Effect.tapError(pending.committed, spendLimitReached(input)),
          settleDelivered: (cost, usage) =>
            pending.settleDelivered(cost, usage).pipe(
              Effect.tapError(spendLimitReached(input)),
              Effect.tap(() => balanceAfter(input.accountId))
            )
        })),
      settleDelivered: (accountId, holdId, cost, usage) =>
        Effect.tap(ledger.settleDelivered(accountId, holdId, cost, usage), () => balanceAfter(accountId))
    })
  })
)
