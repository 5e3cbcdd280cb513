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
import { insertEventsSql, type StreamAppend, upsertHeadsSql } from "./EventAppends.ts"
import { type Heads, planAppends } from "./EventAppends.ts"
import type { BatchOutcome } from "../../app/ports/LedgerWriter.ts"
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
  const decisions: Array<BatchOutcome> = []
  const companionHeads = new Map<string, bigint>()
  const companionWrites: Array<Statement.Fragment> = []
  const appends = new Map<string, Array<StreamAppend["events"][number]>>()
  const touchedHolds = new Map<string, HoldState>()
  const placedHolds = new Set<string>()
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
        if (event.type === "HoldPlaced") placedHolds.add(hold.holdId)
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
    ...holdWrites(sql, touchedHolds, placedHolds),
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
