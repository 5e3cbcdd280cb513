/**
 * Commits a batch of ledger commands at once (group commit): load only the state those commands need, run the pure
 * decider command by command (each rule checked per event, in order, on the state left by the previous command),
 * append all accepted events and write the projections in one statement. One hot account then costs one write per
 * batch instead of one per request (docs/architecture.md, "The ledger").
 *
 * Two ways to commit, same decisions, same rows:
 * - optimistic (first): the stream heads and the state are read in ONE statement (one snapshot), the write is ONE
 *   autocommit statement. Every change to an account's state appends to its stream at `version + 1`, so a writer that
 *   slipped in between collides on `UNIQUE (stream_name, stream_position)` and the whole write fails with nothing
 *   written. Two round trips per batch.
 * - locked (after such a collision): lock the heads in a transaction, read, write, commit — concurrent writers queue
 *   on the head rows instead of retrying. Five round trips, but no retry storm on a hot account.
 *
 * A writer may also pass what it remembers of its accounts from its own last commits (`KnownAccounts`): when every
 * command of a batch finds what it needs there, the read is skipped and the optimistic write is the only round trip.
 * What is remembered is exactly what was committed at the remembered version, and the write still lands at
 * `version + 1`: if anything else wrote the stream since, the write collides, the memory of those accounts is dropped,
 * and the batch is decided again on a fresh, locked read.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { StoreRefused, StoreUnavailable, StreamVersionConflict } from "../../app/StoreErrors.ts"
import { accountStream } from "../../domain/Ids.ts"
import type { AccountState, LedgerCommand } from "../../domain/ledger/LedgerState.ts"
import { storeUnavailable } from "./PgEventStore.ts"
import { sqlState } from "./EventAppends.ts"
import { conflictOnUniqueViolation, type Heads, lockHeads } from "./EventAppends.ts"
import type { BatchOutcome, Companion, CompanionConflict } from "../../app/ports/LedgerWriter.ts"
import { batchKnown, headsOf, loadRows, rememberCommitted, statesOf, streamsOf } from "./LedgerBatchRead.ts"
import { decideBatch } from "./LedgerBatchDecision.ts"

export interface BatchItem {
  readonly command: LedgerCommand
  readonly metadata: Record<string, unknown>
  readonly companion?: Companion | undefined
}

export type { BatchOutcome, Companion, CompanionConflict }

/** An account as this writer committed it last: its state at `version`, and the hash of that version's event. */
export interface KnownAccount {
  readonly state: AccountState
  readonly version: bigint
  readonly hash: string | undefined
}

/**
 * What this instance's writers did, for operators (`/metrics`) and the benchmark: batches and commands committed,
 * and how often a batch had to be decided again with the heads locked after colliding with another writer.
 */
export class WriterStats {
  batches = 0
  commands = 0
  lockedRetries = 0
  /** Sub-batches retried because another instance created one of their streams first. */
  conflictRetries = 0
  /** Batches the database refused, split to commit every command but the refused ones. */
  isolations = 0
}

/** What one writer remembers of its accounts (bounded; the oldest entry goes first). */
export class KnownAccounts {
  readonly #entries = new Map<string, KnownAccount>()
  constructor(readonly maxAccounts = 10_000) {}
  get(accountId: string): KnownAccount | undefined {
    return this.#entries.get(accountId)
  }
  remember(accountId: string, known: KnownAccount) {
    this.#entries.delete(accountId)
    if (this.#entries.size >= this.maxAccounts) this.#entries.delete(this.#entries.keys().next().value as string)
    this.#entries.set(accountId, known)
  }
  forget(accountIds: Iterable<string>) {
    for (const id of accountIds) this.#entries.delete(id)
  }
  get size() {
    return this.#entries.size
  }
}

const DEADLOCK_DETECTED = "40P01"

/** A collision with another writer of the same streams: a position taken first, or a deadlock Postgres broke. */
const onCollision =
  (streams: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    conflictOnUniqueViolation(streams)(effect).pipe(
      Effect.mapError((error) =>
        sqlState(error) === DEADLOCK_DETECTED
          ? new StreamVersionConflict({ stream: streams, expected: "concurrent append" })
          : error
      )
    )

/**
 * The optimistic commit: one read (heads and state in one snapshot), one autocommit write. A concurrent writer of any
 * of the batch's streams makes the write collide on a stream position: StreamVersionConflict, nothing written.
 */
const commitOptimistic = (
  sql: SqlClient.SqlClient,
  items: ReadonlyArray<BatchItem>,
  now: Date,
  newEventId: () => string,
  known: KnownAccounts | undefined
) =>
  Effect.gen(function* () {
    const { accountIds, names } = streamsOf(items)
    let heads: Heads
    let states: Map<string, AccountState>
    if (known !== undefined && batchKnown(items, known)) {
      const versions = new Map<string, bigint | undefined>()
      const hashes = new Map<string, string>()
      states = new Map()
      for (const id of accountIds) {
        const entry = known.get(id) as KnownAccount
        versions.set(accountStream(id), entry.version)
        if (entry.hash !== undefined) hashes.set(accountStream(id), entry.hash)
        states.set(id, entry.state)
      }
      heads = Object.assign(versions, { hashes })
    } else {
      const loaded = yield* loadRows(sql, items, names)
      heads = headsOf(names, loaded.heads)
      states = statesOf(items, loaded, heads)
    }
    const decided = decideBatch(sql, items, heads, states, now, newEventId)
    if (decided instanceof StreamVersionConflict) return yield* decided
    if (decided.write !== undefined) yield* decided.write.pipe(onCollision(accountIds.join(",")))
    if (known !== undefined) rememberCommitted(known, states, heads, decided.versions, decided.hashes)
    return decided.decisions
  })

/** The locked commit: heads locked in name order (writers on other instances queue, never deadlock), then read. */
const commitLocked = (
  sql: SqlClient.SqlClient,
  items: ReadonlyArray<BatchItem>,
  now: Date,
  newEventId: () => string,
  known: KnownAccounts | undefined
) =>
  Effect.gen(function* () {
    const committed = yield* sql.withTransaction(
      Effect.gen(function* () {
        const { accountIds, names } = streamsOf(items)
        const heads = yield* lockHeads(sql, names)
        const loaded = yield* loadRows(sql, items)
        const states = statesOf(items, loaded, heads)
        const decided = decideBatch(sql, items, heads, states, now, newEventId)
        if (decided instanceof StreamVersionConflict) return yield* decided
        if (decided.write !== undefined) yield* decided.write.pipe(onCollision(accountIds.join(",")))
        return { decided, states, heads }
      })
    )
    // Remembered only once the transaction has committed.
    if (known !== undefined) {
      const { decided, states, heads } = committed
      rememberCommitted(known, states, heads, decided.versions, decided.hashes)
    }
    return committed.decided.decisions
  })

/**
 * Decides and commits the batch: optimistically first (two round trips), and after a collision with another writer
 * once more with the heads locked (the state is read again, so every command is decided anew). A rejected command
 * leaves no trace and does not affect the others; if the write fails, nothing of the batch is written and every
 * command fails with the same error.
 */
export const commitBatch = (
  items: ReadonlyArray<BatchItem>,
  now: Date,
  newEventId: () => string,
  known?: KnownAccounts,
  stats?: WriterStats
): Effect.Effect<ReadonlyArray<BatchOutcome>, StoreUnavailable | StreamVersionConflict, SqlClient.SqlClient> =>
  commitBatchRaw(items, now, newEventId, known, stats).pipe(
    Effect.catchTag("SqlError", (error) => Effect.fail(storeUnavailable(error)))
  )

const commitBatchRaw = (
  items: ReadonlyArray<BatchItem>,
  now: Date,
  newEventId: () => string,
  known: KnownAccounts | undefined,
  stats: WriterStats | undefined
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Whatever goes wrong, nothing stale is left behind: the accounts are read afresh next time.
    const forget = Effect.sync(() => known?.forget(items.map((i) => i.command.accountId)))
    const decisions = yield* commitOptimistic(sql, items, now, newEventId, known).pipe(
      Effect.catchTag("StreamVersionConflict", () =>
        forget.pipe(
          Effect.tap(() =>
            Effect.sync(() => {
              if (stats !== undefined) stats.lockedRetries += 1
            })
          ),
          Effect.andThen(commitLocked(sql, items, now, newEventId, known))
        )
      ),
      Effect.tapError(() => forget)
    )
    if (stats !== undefined) {
      stats.batches += 1
      stats.commands += items.length
    }
    return decisions
  })

/** What one command of an isolated batch came to: its ledger outcome, or the store's error for it alone. */
export type ItemResult = BatchOutcome | StoreRefused | StoreUnavailable

// Errors that say nothing about the commands: the connection, the server's resources or state. Every other error the
// server answers with (a data exception, a value past a column's range, a limit) comes from what one command carries.
const NOT_ABOUT_THE_DATA = new Set(["08", "25", "40", "53", "57", "58", "XX"])

/** The SQLSTATE of an error the database raised because of the statement's data, if it is one. */
export const refusedState = (error: unknown): string | undefined => {
  const state = sqlState(error)
  return state !== undefined && !NOT_ABOUT_THE_DATA.has(state.slice(0, 2)) ? state : undefined
}

const CONFLICT_ATTEMPTS = 4

/**
 * Commits a batch so that one command can fail only itself. A batch the database refuses because of some command's
 * data is split in halves, each committed (and split again) on its own, in order: the commands that can commit do,
 * and a refused command ends alone with `StoreRefused`. Splitting costs nothing until a batch fails, then about two
 * round trips per halving (log2 of the batch size). A collision with another writer is retried per sub-batch, so a
 * sub-batch that already committed is never decided twice. Errors that are not about the data (the database is
 * down) fail every command of the sub-batch with `StoreUnavailable`, without splitting.
 */
export const commitIsolated = (
  items: ReadonlyArray<BatchItem>,
  now: Date,
  newEventId: () => string,
  known?: KnownAccounts,
  stats?: WriterStats
): Effect.Effect<ReadonlyArray<ItemResult>, never, SqlClient.SqlClient> => {
  const attempt = (
    part: ReadonlyArray<BatchItem>,
    conflicts: number
  ): Effect.Effect<ReadonlyArray<ItemResult>, never, SqlClient.SqlClient> =>
    commitBatchRaw(part, now, newEventId, known, stats).pipe(
      Effect.catch((error): Effect.Effect<ReadonlyArray<ItemResult>, never, SqlClient.SqlClient> => {
        if (error instanceof StreamVersionConflict) {
          // Another instance created one of these streams first: decide again on fresh state.
          if (stats !== undefined) stats.conflictRetries += 1
          if (conflicts + 1 < CONFLICT_ATTEMPTS) return attempt(part, conflicts + 1)
          const unavailable = new StoreUnavailable({
            message: `stream ${error.stream} kept changing under concurrent writers`
          })
          return Effect.succeed(part.map(() => unavailable))
        }
        const refused = refusedState(error)
        if (refused === undefined) return Effect.succeed(part.map(() => storeUnavailable(error)))
        if (part.length === 1) return Effect.succeed([new StoreRefused({ sqlState: refused })])
        if (stats !== undefined) stats.isolations += 1
        const half = Math.ceil(part.length / 2)
        return Effect.flatMap(attempt(part.slice(0, half), 0), (first) =>
          Effect.map(attempt(part.slice(half), 0), (second) => [...first, ...second])
        )
      })
    )
  return attempt(items, 0)
}
