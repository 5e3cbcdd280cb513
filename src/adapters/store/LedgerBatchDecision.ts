import type { SqlClient, Statement } from "effect/sql"
import { StreamVersionConflict } from "../../app/StoreErrors.ts"
import { accountStream } from "../../domain/Ids.ts"
import { currentSchemaVersion } from "../../domain/ledger/Upcast.ts"
import { addUsageSql, UsageTotals, usageDelta, usageRecords } from "./UsageProjection.ts"
import { decide, evolve } from "../../domain/ledger/LedgerAccount.ts"
import type { AccountState, HoldState, KeySpend } from "../../domain/ledger/LedgerState.ts"
import {
  accountRecords,
  type DepositRow,
  depositRecords,
  holdRecords,
  insertHoldsSql,
  insertDepositsSql,
  keySpendRecords,
  updateKeySpendSql,
  upsertAccountsSql,
  upsertHoldsSql
} from "./LedgerProjection.ts"
import {
  type AppendPlan,
  type Heads,
  insertEventsSql,
  planAppends,
  type StreamAppend,
  upsertHeadsSql
} from "./EventAppends.ts"
import type { BatchOutcome, Companion } from "../../app/ports/LedgerWriter.ts"
import type { LedgerEvent } from "../../domain/ledger/LedgerEvent.ts"
import type { Decided } from "./LedgerBatchRead.ts"
import type { BatchItem } from "./LedgerStore.ts"

/** Holds placed in the batch are inserted (an id used before is refused); holds placed earlier are updated. */
const holdWrites = (
  sql: SqlClient.SqlClient,
  touched: ReadonlyMap<string, HoldState>,
  placed: ReadonlySet<string>
): Array<Statement.Statement<unknown>> => {
  const fresh = [...touched.values()].filter((hold) => placed.has(hold.holdId))
  const earlier = [...touched.values()].filter((hold) => !placed.has(hold.holdId))
  return [
    ...(fresh.length > 0 ? [insertHoldsSql(sql, "public", holdRecords(fresh))] : []),
    ...(earlier.length > 0 ? [upsertHoldsSql(sql, "public", holdRecords(earlier))] : [])
  ]
}

/** What the batch's accepted commands add up to: the events to append per stream and the projection rows they move. */
class BatchWrites {
  readonly appends = new Map<string, Array<StreamAppend["events"][number]>>()
  readonly companionWrites: Array<Statement.Fragment> = []
  readonly touchedHolds = new Map<string, HoldState>()
  readonly placedHolds = new Set<string>()
  readonly touchedKeys = new Map<string, KeySpend>()
  readonly newDeposits: Array<DepositRow> = []
  readonly usage = new UsageTotals()
  private readonly companionHeads = new Map<string, bigint>()

  constructor(
    private readonly sql: SqlClient.SqlClient,
    private readonly newEventId: () => string
  ) {}

  /**
   * Whether a companion's stream is at the version its item expects. One companion per stream per batch: two
   * read-model upserts of one row cannot share a statement.
   */
  companionFresh(companion: Companion, heads: Heads): boolean {
    const head = heads.get(companion.stream) ?? 0n
    const fresh = companion.expected === "no_stream" ? head === 0n : head === companion.expected
    return fresh && !this.companionHeads.has(companion.stream)
  }

  addCompanion(companion: Companion, heads: Heads, metadata: Record<string, unknown>): void {
    this.companionHeads.set(companion.stream, (heads.get(companion.stream) ?? 0n) + BigInt(companion.events.length))
    this.appends.set(
      companion.stream,
      companion.events.map((event) => ({ eventId: this.newEventId(), type: event.type, data: event.data, metadata }))
    )
    this.companionWrites.push(companion.projection(this.sql))
  }

  /**
   * An accepted command's events, appended to its account's stream in order, with the projection rows each moves. The
   * account's state after them.
   */
  addEvents(
    accountId: string,
    before: AccountState,
    events: ReadonlyArray<LedgerEvent>,
    metadata: Record<string, unknown>
  ): AccountState {
    const stream = accountStream(accountId)
    const pending = this.appends.get(stream) ?? []
    this.appends.set(stream, pending)
    let state = before
    for (const event of events) {
      state = evolve(state, event)
      pending.push({
        eventId: this.newEventId(),
        type: event.type,
        schemaVersion: currentSchemaVersion(event.type),
        data: event.data,
        metadata
      })
      this.noteProjections(accountId, state, event)
    }
    return state
  }

  /** The projection rows `event` moves, read from the account's `state` after it. */
  private noteProjections(accountId: string, state: AccountState, event: LedgerEvent): void {
    if (event.type === "FundsDeposited") {
      this.newDeposits.push({
        accountId,
        reference: event.data.reference,
        amount: state.depositReferences.get(event.data.reference) as bigint,
        at: event.data.at
      })
    } else if (event.type !== "AccountOpened") {
      const hold = state.holds.get(event.data.holdId) as HoldState
      this.usage.add(usageDelta(event, hold))
      this.touchedHolds.set(hold.holdId, hold)
      if (event.type === "HoldPlaced") this.placedHolds.add(hold.holdId)
      if (hold.keyId !== null && state.keys.has(hold.keyId)) {
        this.touchedKeys.set(hold.keyId, state.keys.get(hold.keyId) as KeySpend)
      }
    }
  }
}

/** One command decided on its account's state so far in the batch; what it accepts joins `writes`. */
const decideItem = (
  item: BatchItem,
  heads: Heads,
  states: Map<string, AccountState>,
  writes: BatchWrites
): BatchOutcome => {
  const { accountId } = item.command
  const companion = item.companion
  if (companion !== undefined && !writes.companionFresh(companion, heads)) {
    return { _tag: "CompanionConflict", stream: companion.stream }
  }
  const before = states.get(accountId) as AccountState
  const decision = decide(before, item.command)
  if (decision._tag === "Rejected" || decision.events.length === 0) return decision
  if (companion !== undefined) writes.addCompanion(companion, heads, item.metadata)
  states.set(accountId, writes.addEvents(accountId, before, decision.events, item.metadata))
  return decision
}

/** The one statement that writes the batch: its events, its streams' heads and every projection row it moves. */
const batchStatement = (
  sql: SqlClient.SqlClient,
  writes: BatchWrites,
  states: Map<string, AccountState>,
  plan: AppendPlan
): Statement.Statement<unknown> => {
  const accountRows = [...writes.appends.keys()]
    .filter((stream) => stream.startsWith("account-"))
    .map((stream) => ({
      state: states.get(stream.slice("account-".length)) as AccountState,
      version: plan.versions.get(stream) as bigint
    }))
  const parts = [
    insertEventsSql(sql, plan.records),
    upsertAccountsSql(sql, "public", accountRecords(accountRows)),
    ...holdWrites(sql, writes.touchedHolds, writes.placedHolds),
    ...(writes.touchedKeys.size > 0
      ? [updateKeySpendSql(sql, "public", keySpendRecords([...writes.touchedKeys]))]
      : []),
    ...(writes.newDeposits.length > 0 ? [insertDepositsSql(sql, "public", depositRecords(writes.newDeposits))] : []),
    ...(writes.usage.size > 0 ? [addUsageSql(sql, "public", usageRecords(writes.usage.values()))] : []),
    ...writes.companionWrites,
    // Last on purpose: Postgres runs unreferenced data-modifying CTEs last-declared first, so the optimistic write
    // takes the head rows before any other row lock, in the same order as the locked path; a writer then waits on
    // the head instead of deadlocking with one that holds it (the order is not a documented guarantee: a deadlock is
    // still caught below and treated as a collision).
    upsertHeadsSql(sql, plan)
  ]
  // One statement: data-modifying CTEs all see the same snapshot and commit (or fail) together.
  return sql`WITH ${sql.csv(parts.map((w, index) => sql`w${sql.literal(String(index))} AS (${w})`))} SELECT 1`
}

/**
 * Runs the decider over the batch on the state read at `heads` and builds the one statement that writes everything
 * (events, heads, projections); `undefined` when nothing is to be written.
 */
export const decideBatch = (
  sql: SqlClient.SqlClient,
  items: ReadonlyArray<BatchItem>,
  heads: Heads,
  states: Map<string, AccountState>,
  now: Date,
  newEventId: () => string
): StreamVersionConflict | Decided => {
  const writes = new BatchWrites(sql, newEventId)
  const decisions = items.map((item) => decideItem(item, heads, states, writes))
  if (writes.appends.size === 0) return { decisions, write: undefined, versions: new Map(), hashes: new Map() }
  const expected = [...writes.appends].map(([stream, events]) => ({
    stream,
    expected: heads.get(stream) ?? ("no_stream" as const),
    events
  }))
  const plan = planAppends(expected, heads, now)
  if (plan instanceof StreamVersionConflict) return plan
  return { decisions, write: batchStatement(sql, writes, states, plan), versions: plan.versions, hashes: plan.hashes }
}
