/**
 * The ledger's writer on Postgres/PGlite: commands queue per shard (an account always hashes to the same one, so one
 * writer decides it), each shard commits what has queued as one batch in one transaction, and a batch the database
 * refuses is split until the refused command stands alone (LedgerStore.commitIsolated) — every other command of the
 * batch commits and gets its answer. One hot account takes ~1,600 single-command transactions a second but tens of
 * thousands of commands a second in shared ones; that is why commands are batched here and not one by one.
 */
import { Clock, Deferred, Effect, Layer, Queue } from "effect"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import type { StoreHealth } from "../../app/LiveHolds.ts"
import { Ledger, type LedgerOptions } from "../../app/Ledger.ts"
import { type BatchOutcome, type Companion, LedgerWriter } from "../../app/ports/LedgerWriter.ts"
import { StoreRefused, StoreUnavailable } from "../../app/StoreErrors.ts"
import type { LedgerCommand } from "../../domain/ledger/LedgerState.ts"
import { commitIsolated, KnownAccounts, WriterStats } from "./LedgerStore.ts"
import { makePgHoldLeases } from "./PgHoldLeases.ts"

interface Pending {
  readonly command: LedgerCommand
  readonly metadata: Record<string, unknown>
  readonly companion: Companion | undefined
  readonly done: Deferred.Deferred<BatchOutcome, StoreUnavailable | StoreRefused>
}

const shardOf = (accountId: string, shards: number): number => {
  let hash = 0
  for (let i = 0; i < accountId.length; i++) hash = (hash * 31 + accountId.charCodeAt(i)) | 0
  return Math.abs(hash) % shards
}

export const layer = (
  options: Pick<LedgerOptions, "shards" | "maxBatch">
): Layer.Layer<LedgerWriter, never, SqlClient.SqlClient> =>
  Layer.effect(
    LedgerWriter,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const queues = yield* Effect.forEach(Array.from({ length: options.shards }), () => Queue.unbounded<Pending>())
      // Accounts as this instance last committed them: a batch that needs nothing else skips its read. Each account
      // has one shard, so one writer, and every write is still checked against the stream head in the database.
      const known = new KnownAccounts()
      const stats = new WriterStats()
      // The last time this instance saw the database fail (its start counts: it cannot know what happened before).
      const health: StoreHealth = { troubleAt: yield* Clock.currentTimeMillis }

      const runBatch = (batch: ReadonlyArray<Pending>) =>
        Effect.gen(function* () {
          const now = new Date(yield* Clock.currentTimeMillis)
          const items = batch.map((p) => ({ command: p.command, metadata: p.metadata, companion: p.companion }))
          const results = yield* commitIsolated(items, now, randomUUID, known, stats).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
          if (results.some((r) => r instanceof StoreUnavailable)) health.troubleAt = now.getTime()
          yield* Effect.forEach(
            batch,
            (p, i) => {
              const result = results[i]
              return result instanceof StoreUnavailable || result instanceof StoreRefused
                ? Deferred.fail(p.done, result)
                : Deferred.succeed(p.done, result)
            },
            { discard: true }
          )
        }).pipe(
          // A batch that started commits and answers even while the server shuts down.
          Effect.uninterruptible
        )

      for (const queue of queues) {
        yield* Queue.takeBetween(queue, 1, options.maxBatch).pipe(
          Effect.flatMap(runBatch),
          Effect.forever,
          Effect.forkScoped
        )
      }

      const submit = (command: LedgerCommand, metadata: Record<string, unknown>, companion: Companion | undefined) =>
        Effect.gen(function* () {
          const done = yield* Deferred.make<BatchOutcome, StoreUnavailable | StoreRefused>()
          yield* Queue.offer(queues[shardOf(command.accountId, options.shards)], {
            command,
            metadata,
            companion,
            done
          })
          return yield* Deferred.await(done)
        })

      return LedgerWriter.of({
        submit,
        knownState: (accountId) => known.get(accountId)?.state,
        stats: () => ({
          batches: stats.batches,
          commands: stats.commands,
          lockedRetries: stats.lockedRetries,
          conflictRetries: stats.conflictRetries,
          isolations: stats.isolations
        }),
        health,
        leases: makePgHoldLeases(sql)
      })
    })
  )

/** The ledger over this store: its rules (app/Ledger.ts) on the batched writer, as the gateway runs it. */
export const layerWith = (options: LedgerOptions): Layer.Layer<Ledger, never, SqlClient.SqlClient> =>
  Ledger.layerWith(options).pipe(Layer.provide(layer(options)))
