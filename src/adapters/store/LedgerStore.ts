/**
 * Commits a batch of ledger commands at once (group commit): load only the state those commands need, run the pure
 * decider command by command (each rule checked per event, in order, on the state left by the previous command),
 * append all accepted events and write the projections in one statement. One hot account then costs one write per
 * batch instead of one per request (stack-notes §0b).
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
import { SqlClient, type Statement } from "effect/sql"
import { StoreRefused, StoreUnavailable, StreamVersionConflict } from "../../app/StoreErrors.ts"
import { accountStream } from "../../domain/Ids.ts"
import { currentSchemaVersion } from "../../domain/ledger/Upcast.ts"
import { addUsageSql, UsageTotals, usageDelta, usageRecords } from "./UsageProjection.ts"
import {
  type AccountState,
  type Decision,
  decide,
  evolve,
  type HoldState,
  initialState,
  type KeySpend,
  type LedgerCommand
} from "../../domain/ledger/LedgerAccount.ts"
import {
  accountRecords,
  type DepositRow,
  depositRecords,
  holdRecords,
  insertDepositsSql,
  keySpendRecords,
  updateKeySpendSql,
  upsertAccountsSql,
  upsertHoldsSql
} from "./LedgerProjection.ts"
import {
  conflictOnUniqueViolation,
  type Heads,
  insertEventsSql,
  lockHeads,
  planAppends,
  type StreamAppend,
  sqlState,
  storeUnavailable,
  upsertHeadsSql
} from "./PgEventStore.ts"
import type { BatchOutcome, Companion, CompanionConflict } from "../../app/ports/LedgerWriter.ts"

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

/**
 * Whether a command can be decided on what is remembered alone: the same state a read would load. A settle or release
 * needs its hold (and the hold's key spend), a hold on a key needs that key's spend; a deposit needs the references
 * already used, which are not all remembered, so it always reads.
 */
const knownEnough = (item: BatchItem, known: KnownAccount | undefined): boolean => {
  if (known === undefined || item.companion !== undefined) return false
  const command = item.command
  switch (command.type) {
    case "OpenAccount":
      return true
    case "Deposit":
      return false
    case "PlaceHold":
      return command.keyId === null || known.state.keys.has(command.keyId)
    case "SettleHold":
    case "ReleaseHold": {
      const hold = known.state.holds.get(command.holdId)
      return hold !== undefined && (hold.keyId === null || known.state.keys.has(hold.keyId))
    }
  }
}

/** Remembers each account of a committed batch at its new head; resolved holds are not kept. */
const rememberCommitted = (
  known: KnownAccounts,
  states: ReadonlyMap<string, AccountState>,
  heads: Heads,
  versions: ReadonlyMap<string, bigint>,
  hashes: ReadonlyMap<string, string>
) => {
  for (const [accountId, state] of states) {
    const stream = accountStream(accountId)
    const version = versions.get(stream) ?? heads.get(stream)
    if (version === undefined || !state.exists) continue
    const pending = new Map([...state.holds].filter(([, hold]) => hold.status === "pending"))
    known.remember(accountId, {
      state: { ...state, holds: pending },
      version,
      hash: hashes.get(stream) ?? heads.hashes.get(stream)
    })
  }
}

/** Bigints travel as text inside the aggregated JSON: JSON numbers lose precision above 2^53. Absent = not asked. */
interface Loaded {
  readonly accounts?: ReadonlyArray<{
    id: string
    name: string
    created_at: string
    deposited: string
    captured: string
    held: string
  }> | null
  readonly holds?: ReadonlyArray<{
    hold_id: string
    account_id: string
    key_id: string | null
    amount: string
    status: HoldState["status"]
    captured: string
    refunded: string
    model: string | null
    plugin: string | null
    request_id: string | null
    expires_at: string | null
    placed_at: string
    resolved_at: string | null
  }> | null
  readonly keys?: ReadonlyArray<{ id: string; account_id: string; spent: string; held: string }> | null
  readonly refs?: ReadonlyArray<{ account_id: string; reference: string; amount: string }> | null
  /** Only when the heads are read with the state (optimistic path). */
  readonly heads?: ReadonlyArray<{ stream_name: string; version: string; head_hash: string | null }> | null
}

const iso = (value: string | null): string | null => (value === null ? null : new Date(value).toISOString())

/** Settle and release need the hold; a new hold's id is fresh (and unique in the table), so it needs nothing. */
const heldIdOf = (command: LedgerCommand): string | undefined =>
  command.type === "SettleHold" || command.type === "ReleaseHold" ? command.holdId : undefined

/**
 * Everything the batch's commands need, in ONE statement: the accounts, the holds being resolved, the keys whose spend
 * moves, the deposit references already used, and — when `headNames` is given — the stream heads, read in the same
 * snapshot as the state. In the locked path the heads are locked first and this reads committed state after.
 */
const loadRows = (sql: SqlClient.SqlClient, items: ReadonlyArray<BatchItem>, headNames?: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const accountIds = [...new Set(items.map((i) => i.command.accountId))]
    const holdIds = [...new Set(items.flatMap((i) => heldIdOf(i.command) ?? []))]
    const keyIds = [
      ...new Set(
        items.flatMap((i) => (i.command.type === "PlaceHold" && i.command.keyId !== null ? [i.command.keyId] : []))
      )
    ]
    const deposits = items.flatMap((i) => (i.command.type === "Deposit" ? [i.command] : []))
    // Only the parts this batch needs: the statement is planned on every execution, and each part costs planning.
    const parts: Array<Statement.Fragment> = [
      sql`(SELECT json_agg(json_build_object('id', a.id, 'name', a.name, 'created_at', a.created_at,
           'deposited', a.deposited::text, 'captured', a.captured::text, 'held', a.held::text))
         FROM accounts a WHERE a.id = ANY(${accountIds}::uuid[])) AS accounts`
    ]
    if (holdIds.length > 0) {
      parts.push(sql`(SELECT json_agg(json_build_object('hold_id', h.hold_id, 'account_id', h.account_id,
           'key_id', h.key_id, 'amount', h.amount::text, 'status', h.status, 'captured', h.captured::text,
           'refunded', h.refunded::text, 'model', h.model, 'plugin', h.plugin, 'request_id', h.request_id,
           'expires_at', h.expires_at, 'placed_at', h.placed_at, 'resolved_at', h.resolved_at))
         FROM holds h WHERE h.hold_id = ANY(${holdIds}::uuid[])) AS holds`)
    }
    const keysOfHolds = sql`SELECT key_id FROM holds WHERE hold_id = ANY(${holdIds}::uuid[])`
    const keyFilter =
      keyIds.length > 0 && holdIds.length > 0
        ? sql`k.id = ANY(${keyIds}::uuid[]) OR k.id IN (${keysOfHolds})`
        : keyIds.length > 0
          ? sql`k.id = ANY(${keyIds}::uuid[])`
          : holdIds.length > 0
            ? sql`k.id IN (${keysOfHolds})`
            : undefined
    if (keyFilter !== undefined) {
      parts.push(sql`(SELECT json_agg(json_build_object('id', k.id, 'account_id', k.account_id,
           'spent', k.spent::text, 'held', k.held::text))
         FROM api_keys k WHERE ${keyFilter}) AS keys`)
    }
    if (deposits.length > 0) {
      parts.push(sql`(SELECT json_agg(json_build_object('account_id', d.account_id, 'reference', d.reference,
           'amount', d.amount::text))
         FROM deposits d JOIN unnest(${deposits.map((d) => d.accountId)}::uuid[], ${deposits.map((d) => d.reference)}::text[])
           AS q(account_id, reference) ON d.account_id = q.account_id AND d.reference = q.reference) AS refs`)
    }
    if (headNames !== undefined) {
      parts.push(sql`(SELECT json_agg(json_build_object('stream_name', s.stream_name, 'version', s.version::text,
           'head_hash', encode(s.head_hash, 'hex')))
         FROM streams s WHERE s.stream_name = ANY(${headNames}::text[])) AS heads`)
    }
    const [loaded] = yield* sql<Loaded>`SELECT ${sql.csv(parts)}`
    return loaded
  })

/** Heads as read in the optimistic path, in the shape `lockHeads` returns (undefined version = no head row yet). */
const headsOf = (names: ReadonlyArray<string>, rows: Loaded["heads"]): Heads => {
  const heads = new Map<string, bigint | undefined>(names.map((n) => [n, undefined]))
  const hashes = new Map<string, string>()
  for (const row of rows ?? []) {
    heads.set(row.stream_name, BigInt(row.version))
    if (row.head_hash !== null) hashes.set(row.stream_name, row.head_hash)
  }
  return Object.assign(heads, { hashes })
}

/** Each account's state before the batch, from the loaded rows; `exists` comes from the account stream's head. */
const statesOf = (items: ReadonlyArray<BatchItem>, loaded: Loaded, heads: Heads) => {
  const states = new Map<string, AccountState>()
  for (const item of items) {
    const id = item.command.accountId
    if (!states.has(id)) states.set(id, initialState(id))
  }
  for (const row of loaded.accounts ?? []) {
    const version = heads.get(accountStream(row.id))
    states.set(row.id, {
      ...initialState(row.id),
      exists: version !== undefined && version > 0n,
      name: row.name,
      createdAt: new Date(row.created_at).toISOString(),
      deposited: BigInt(row.deposited),
      captured: BigInt(row.captured),
      held: BigInt(row.held)
    })
  }
  const patch = (accountId: string, change: (state: AccountState) => AccountState) => {
    const state = states.get(accountId)
    if (state !== undefined) states.set(accountId, change(state))
  }
  for (const row of loaded.holds ?? []) {
    const hold: HoldState = {
      holdId: row.hold_id,
      accountId: row.account_id,
      keyId: row.key_id,
      amount: BigInt(row.amount),
      status: row.status,
      captured: BigInt(row.captured),
      refunded: BigInt(row.refunded),
      model: row.model,
      plugin: row.plugin,
      requestId: row.request_id,
      expiresAt: iso(row.expires_at),
      placedAt: new Date(row.placed_at).toISOString(),
      resolvedAt: iso(row.resolved_at)
    }
    patch(row.account_id, (s) => ({ ...s, holds: new Map(s.holds).set(row.hold_id, hold) }))
  }
  for (const row of loaded.keys ?? []) {
    const spend = { spent: BigInt(row.spent), held: BigInt(row.held) }
    patch(row.account_id, (s) => ({ ...s, keys: new Map(s.keys).set(row.id, spend) }))
  }
  for (const row of loaded.refs ?? []) {
    patch(row.account_id, (s) => ({
      ...s,
      depositReferences: new Map(s.depositReferences).set(row.reference, BigInt(row.amount))
    }))
  }
  return states
}

/** The streams a batch appends to (or checks), in name order: the order heads are locked in. */
const streamsOf = (items: ReadonlyArray<BatchItem>) => {
  const accountIds = [...new Set(items.map((i) => i.command.accountId))].sort()
  const companionStreams = items.flatMap((i) => (i.companion === undefined ? [] : [i.companion.stream]))
  return { accountIds, names: [...new Set([...accountIds.map(accountStream), ...companionStreams])].sort() }
}

interface Decided {
  readonly decisions: Array<BatchOutcome>
  readonly write: Statement.Statement<unknown> | undefined
  /** The new head of every appended stream, and its last event's hash. */
  readonly versions: ReadonlyMap<string, bigint>
  readonly hashes: ReadonlyMap<string, string>
}

/**
 * Runs the decider over the batch on the state read at `heads` and builds the one statement that writes everything
 * (events, heads, projections); `undefined` when nothing is to be written.
 */
const decideBatch = (
  sql: SqlClient.SqlClient,
  items: ReadonlyArray<BatchItem>,
  heads: Heads,
  states: Map<string, AccountState>,
  now: Date,
  newEventId: () => string
): StreamVersionConflict | Decided => {
  const decisions: Array<BatchOutcome> = []
  const companionHeads = new Map<string, bigint>()
  const companionWrites: Array<Statement.Fragment> = []
  const appends = new Map<string, Array<StreamAppend["events"][number]>>()
  const touchedHolds = new Map<string, HoldState>()
  const touchedKeys = new Map<string, KeySpend>()
  const newDeposits: Array<DepositRow> = []
  const usage = new UsageTotals()
  for (const item of items) {
    const accountId = item.command.accountId
    const companion = item.companion
    if (companion !== undefined) {
      // One companion per stream per batch: two read-model upserts of one row cannot share a statement.
      const head = heads.get(companion.stream) ?? 0n
      const fresh = companion.expected === "no_stream" ? head === 0n : head === companion.expected
      if (!fresh || companionHeads.has(companion.stream)) {
        decisions.push({ _tag: "CompanionConflict", stream: companion.stream })
        continue
      }
    }
    const before = states.get(accountId) as AccountState
    const decision = decide(before, item.command)
    decisions.push(decision)
    if (decision._tag === "Rejected" || decision.events.length === 0) continue
    if (companion !== undefined) {
      companionHeads.set(companion.stream, (heads.get(companion.stream) ?? 0n) + BigInt(companion.events.length))
      appends.set(
        companion.stream,
        companion.events.map((event) => ({
          eventId: newEventId(),
          type: event.type,
          data: event.data,
          metadata: item.metadata
        }))
      )
      companionWrites.push(companion.projection(sql))
    }
    let state = before
    const stream = accountStream(accountId)
    const pending = appends.get(stream) ?? []
    appends.set(stream, pending)
    for (const event of decision.events) {
      state = evolve(state, event)
      pending.push({
        eventId: newEventId(),
        type: event.type,
        schemaVersion: currentSchemaVersion(event.type),
        data: event.data,
        metadata: item.metadata
      })
      if (event.type === "FundsDeposited") {
        newDeposits.push({
          accountId,
          reference: event.data.reference,
          amount: state.depositReferences.get(event.data.reference) as bigint,
          at: event.data.at
        })
      }
      if (event.type !== "AccountOpened" && event.type !== "FundsDeposited") {
        const hold = state.holds.get(event.data.holdId) as HoldState
        usage.add(usageDelta(event, hold))
        touchedHolds.set(hold.holdId, hold)
        if (hold.keyId !== null && state.keys.has(hold.keyId)) {
          touchedKeys.set(hold.keyId, state.keys.get(hold.keyId) as KeySpend)
        }
      }
    }
    states.set(accountId, state)
  }
  if (appends.size === 0) return { decisions, write: undefined, versions: new Map(), hashes: new Map() }
  const plan = planAppends(
    [...appends].map(([stream, events]) => ({
      stream,
      expected: heads.get(stream) ?? "no_stream",
      events
    })),
    heads,
    now
  )
  if (plan instanceof StreamVersionConflict) return plan
  const accountRows = [...appends.keys()]
    .filter((stream) => stream.startsWith("account-"))
    .map((stream) => ({
      state: states.get(stream.slice("account-".length)) as AccountState,
      version: plan.versions.get(stream) as bigint
    }))
  const writes = [
    insertEventsSql(sql, plan.records),
    upsertAccountsSql(sql, "public", accountRecords(accountRows)),
    ...(touchedHolds.size > 0 ? [upsertHoldsSql(sql, "public", holdRecords([...touchedHolds.values()]))] : []),
    ...(touchedKeys.size > 0 ? [updateKeySpendSql(sql, "public", keySpendRecords([...touchedKeys]))] : []),
    ...(newDeposits.length > 0 ? [insertDepositsSql(sql, "public", depositRecords(newDeposits))] : []),
    ...(usage.size > 0 ? [addUsageSql(sql, "public", usageRecords(usage.values()))] : []),
    ...companionWrites,
    // Last on purpose: Postgres runs unreferenced data-modifying CTEs last-declared first, so the optimistic write
    // takes the head rows before any other row lock, in the same order as the locked path; a writer then waits on
    // the head instead of deadlocking with one that holds it (the order is not a documented guarantee: a deadlock is
    // still caught below and treated as a collision).
    upsertHeadsSql(sql, plan)
  ]
  // One statement: data-modifying CTEs all see the same snapshot and commit (or fail) together.
  const write = sql`WITH ${sql.csv(writes.map((w, index) => sql`w${sql.literal(String(index))} AS (${w})`))} SELECT 1`
  return { decisions, write, versions: plan.versions, hashes: plan.hashes }
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
    if (known !== undefined && items.every((item) => knownEnough(item, known.get(item.command.accountId)))) {
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
