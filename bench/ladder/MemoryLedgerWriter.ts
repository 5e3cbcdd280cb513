/**
 * Bench only (the ladder's "in-memory ledger" rung, bench/ladder/MemoryLedgerGateway.ts): the ledger's writer with
 * holds, settlements and releases decided in this process's memory by the same decider, and never written. What the
 * rung measures is everything a request costs around the ledger's store.
 *
 * Opening accounts and deposits still go to the store's writer (and are mirrored here), so that the admin API's
 * projections exist and keys can be created for them. Nothing here is durable: never a production layer.
 */
import { Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { decide, evolve } from "../../src/domain/ledger/LedgerAccount.ts"
import {
  type AccountState,
  type Decision,
  initialState,
  type LedgerCommand
} from "../../src/domain/ledger/LedgerState.ts"
import { type BatchOutcome, LedgerWriter, type LingeringCommand } from "../../src/app/ports/LedgerWriter.ts"

export const wrap = (
  store: Layer.Layer<LedgerWriter, never, SqlClient.SqlClient>
): Layer.Layer<LedgerWriter, never, SqlClient.SqlClient> =>
  Layer.effect(
    LedgerWriter,
    Effect.gen(function* () {
      const durable = yield* LedgerWriter
      const accounts = new Map<string, AccountState>()
      let commands = 0

      const apply = (command: LedgerCommand, decision: Decision): Decision => {
        commands++
        if (decision._tag === "Accepted") {
          let state = accounts.get(command.accountId) ?? initialState(command.accountId)
          for (const event of decision.events) state = evolve(state, event)
          // A resolved hold is never read again here: dropping it keeps the map the size of the live holds.
          if (command.type === "SettleHold" || command.type === "ReleaseHold") {
            const holds = new Map(state.holds)
            holds.delete(command.holdId)
            state = { ...state, holds }
          }
          accounts.set(command.accountId, state)
        }
        return decision
      }
      const decideHere = (command: LedgerCommand): Decision =>
        apply(command, decide(accounts.get(command.accountId) ?? initialState(command.accountId), command))
      const durableCommand = (command: LedgerCommand) => command.type === "OpenAccount" || command.type === "Deposit"

      const submit: LedgerWriter["Service"]["submit"] = (command, metadata, companion) =>
        durableCommand(command) || companion !== undefined
          ? Effect.tap(durable.submit(command, metadata, companion), (outcome) =>
              Effect.sync(() => {
                if (outcome._tag !== "CompanionConflict") apply(command, outcome)
              })
            )
          : Effect.sync((): BatchOutcome => decideHere(command))

      const submitLingering: LedgerWriter["Service"]["submitLingering"] = (command, _metadata, onDecided) =>
        Effect.sync((): LingeringCommand => {
          const outcome = decideHere(command)
          onDecided?.(outcome)
          return { outcome: Effect.succeed(outcome), flush: Effect.void, followWith: () => Effect.succeed(undefined) }
        })

      return LedgerWriter.of({
        submit,
        submitLingering,
        knownState: (accountId) => accounts.get(accountId),
        stats: () => ({ batches: commands, commands, lockedRetries: 0, conflictRetries: 0, isolations: 0 }),
        health: durable.health,
        leases: {
          write: () => Effect.void,
          orphans: () => Effect.succeed([]),
          dropResolved: Effect.void
        }
      })
    })
  ).pipe(Layer.provide(store))
