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
import {
  type BatchOutcome,
  type Companion,
  LedgerWriter,
  type LingeringCommand,
  type LingerUntil
} from "../../app/ports/LedgerWriter.ts"
import { StoreRefused, StoreUnavailable } from "../../app/StoreErrors.ts"
import type { LedgerCommand } from "../../domain/ledger/LedgerState.ts"
import { commitIsolated, type ItemResult, KnownAccounts, WriterStats } from "./LedgerStore.ts"
import { makePgHoldLeases } from "./PgHoldLeases.ts"

interface Pending {
  readonly command: LedgerCommand
  readonly metadata: Record<string, unknown>
  readonly companion: Companion | undefined
  readonly done: Deferred.Deferred<BatchOutcome, StoreUnavailable | StoreRefused>
  readonly onDecided?: ((outcome: BatchOutcome | StoreUnavailable | StoreRefused) => void) | undefined
}

const shardOf = (accountId: string, shards: number): number => {
  let hash = 0
  for (let i = 0; i < accountId.length; i++) hash = (hash * 31 + accountId.charCodeAt(i)) | 0
  return Math.abs(hash) % shards
}

/** A lingering command, when its linger time is up (ms since the epoch), and whether it rides the next batch. */
interface Lingering {
  readonly pending: Pending
  readonly until: number
  readonly nextBatch: boolean
}

export const layer = (
  options: Pick<LedgerOptions, "shards" | "maxBatch" | "holdLingerMillis">
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
              const result = results[i] as ItemResult
              // A caller's observer cannot stop the writer: whatever it throws is its own.
              try {
                p.onDecided?.(result)
              } catch {}
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

      // A lingering command waits in its shard's `lingering` map until its own follower (a hold's settlement or
      // release) is submitted, until any other command of its account is, or until its linger time is up: then it
      // goes into the queue, ahead of whatever of its account comes next. Commands of one account therefore reach the
      // queue in submission order (the decider's order); other accounts' commands, decided apart, do not move it. At
      // most one command of an account lingers at a time (the next one of the account sends it on its way), so the
      // map is keyed by account, and its insertion order is the order in which linger times run out. A command
      // lingering until the `"next-batch"` also goes, after what was queued, with the next batch its shard takes.
      const shards = queues.map((queue) => ({
        queue,
        lingering: new Map<string, Lingering>(),
        /** How many of `lingering` ride the next batch. */
        riders: 0,
        timer: undefined as ReturnType<typeof setTimeout> | undefined
      }))
      type Shard = (typeof shards)[number]
      /** Queues the account's lingering command (if any), then `behind`, in one offer (so in one batch if they fit). */
      const release = (shard: Shard, accountId: string, behind?: Pending) => {
        const lingering = shard.lingering.get(accountId)
        if (lingering === undefined) {
          if (behind !== undefined) Queue.offerUnsafe(shard.queue, behind)
          return
        }
        forget(shard, accountId, lingering)
        Queue.offerAllUnsafe(shard.queue, behind === undefined ? [lingering.pending] : [lingering.pending, behind])
      }
      /** Queues the commands whose linger time is up, and waits for the next one's. */
      const releaseDue = (shard: Shard) => {
        shard.timer = undefined
        const now = Date.now()
        const due: Array<Pending> = []
        for (const [accountId, lingering] of shard.lingering) {
          if (lingering.until > now) break
          forget(shard, accountId, lingering)
          due.push(lingering.pending)
        }
        if (due.length > 0) Queue.offerAllUnsafe(shard.queue, due)
        arm(shard)
      }
      const forget = (shard: Shard, accountId: string, lingering: Lingering) => {
        shard.lingering.delete(accountId)
        if (lingering.nextBatch) shard.riders -= 1
      }
      /** The batch the writer took, and after it the commands riding along, up to `maxBatch` in all. */
      const withRiders = (shard: Shard, taken: ReadonlyArray<Pending>): ReadonlyArray<Pending> => {
        if (shard.riders === 0 || taken.length >= options.maxBatch) return taken
        const batch = [...taken]
        for (const [accountId, lingering] of shard.lingering) {
          if (batch.length >= options.maxBatch) break
          if (!lingering.nextBatch) continue
          forget(shard, accountId, lingering)
          batch.push(lingering.pending)
        }
        return batch
      }
      /** Sets the shard's timer for the first linger time to run out, unless it is set or nothing lingers. */
      const arm = (shard: Shard) => {
        const first = shard.lingering.values().next()
        if (shard.timer !== undefined || first.done === true) return
        shard.timer = setTimeout(() => releaseDue(shard), Math.max(0, first.value.until - Date.now()))
      }
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          for (const shard of shards) clearTimeout(shard.timer)
        })
      )

      for (const shard of shards) {
        yield* Queue.takeBetween(shard.queue, 1, options.maxBatch).pipe(
          Effect.flatMap((taken) => runBatch(withRiders(shard, taken))),
          Effect.forever,
          Effect.forkScoped
        )
      }

      const pendingOf = (
        command: LedgerCommand,
        metadata: Record<string, unknown>,
        companion?: Companion,
        onDecided?: Pending["onDecided"]
      ): Pending => ({
        command,
        metadata,
        companion,
        done: Deferred.makeUnsafe<BatchOutcome, StoreUnavailable | StoreRefused>(),
        onDecided
      })
      const shardFor = (command: LedgerCommand) => shards[shardOf(command.accountId, options.shards)] as Shard

      const submit = (command: LedgerCommand, metadata: Record<string, unknown>, companion: Companion | undefined) =>
        Effect.suspend(() => {
          const pending = pendingOf(command, metadata, companion)
          release(shardFor(command), command.accountId, pending)
          return Deferred.await(pending.done)
        })

      const submitLingering = (
        command: LedgerCommand,
        metadata: Record<string, unknown>,
        onDecided?: Pending["onDecided"],
        until: LingerUntil = "follower"
      ) =>
        Effect.sync((): LingeringCommand => {
          const pending = pendingOf(command, metadata, undefined, onDecided)
          const shard = shardFor(command)
          const { accountId } = command
          release(shard, accountId)
          const nextBatch = until === "next-batch"
          shard.lingering.set(accountId, { pending, until: Date.now() + options.holdLingerMillis, nextBatch })
          if (nextBatch) shard.riders += 1
          arm(shard)
          const waiting = () => shard.lingering.get(accountId)?.pending === pending
          return {
            outcome: Deferred.await(pending.done),
            flush: Effect.sync(() => {
              if (waiting()) release(shard, accountId)
            }),
            followWith: (next, nextMetadata) =>
              Effect.sync(() => {
                if (!waiting()) return undefined
                const follower = pendingOf(next, nextMetadata)
                release(shard, accountId, follower)
                return Deferred.await(follower.done)
              })
          }
        })

      return LedgerWriter.of({
        submit,
        submitLingering,
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
