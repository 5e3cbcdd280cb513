/**
 * Account statements and point-in-time balances, folded from the account's events (never from the projections), so
 * they answer for any moment in the stream's history. The fold kept while a statement streams is bounded: balances,
 * plus only the holds that still have an event to come (pending holds, and a settled hold whose refund or overage
 * follows in the same command), so a statement of a million events holds as little as one of ten.
 *
 * Range semantics: a bound is an ISO 8601 instant (compared with the event's recorded time) or a global position.
 * `from` is inclusive; `to` is exclusive for an instant and inclusive for a position; `asOf` is inclusive for both.
 * Bounds resolve to a prefix of the stream (the first event at or past the bound and everything after it is out), so
 * opening + Σ delta = closing holds for every range.
 */
import { Context, type Effect, Stream } from "effect"
import { parseInstant } from "../domain/Instants.ts"
import type { Micros } from "../domain/Money.ts"
import { amountOf, applyBalanceMove, balanceMoveOf } from "../domain/ledger/BalanceMove.ts"
import type { AccountFigures } from "../domain/ledger/LedgerState.ts"
import type { LedgerEvent } from "../domain/ledger/LedgerEvent.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import type { StoreUnavailable } from "./StoreErrors.ts"

/** Where a range starts or ends: a global position, or an instant (ISO 8601, normalized to UTC milliseconds). */
export type Bound =
  | { readonly _tag: "Position"; readonly position: bigint }
  | { readonly _tag: "Instant"; readonly at: string }

/** Parses `from`, `to` or `asOf`: all digits → a global position, else an ISO 8601 instant; undefined otherwise. */
export const parseBound = (text: string): Bound | undefined => {
  if (/^\d{1,18}$/.test(text)) return { _tag: "Position", position: BigInt(text) }
  const millis = parseInstant(text)
  // Parsing a given instant, not reading the clock.
  return millis === undefined ? undefined : { _tag: "Instant", at: new Date(millis).toISOString() }
}

/** The bound as the answer echoes it: a position as a number, an instant as its normalized ISO string. */
export const boundView = (bound: Bound | null): number | string | null =>
  bound === null ? null : bound._tag === "Position" ? Number(bound.position) : bound.at

/** balance = deposited − captured; available = balance − held. */
export interface Balances {
  readonly balance: Micros
  readonly held: Micros
  readonly available: Micros
}

/** What an entry about a hold borrows from its HoldPlaced. */
export interface HoldInfo {
  readonly keyId: string | null
  readonly model: string | null
  readonly plugin: string | null
  readonly requestId: string | null
  readonly amount: Micros
  /** Pending, or settled with its refund or overage still to come; dropped from the fold once nothing follows. */
  readonly awaiting: "resolution" | "follow-up"
}

/** The bounded fold: balances and the holds that have an event still to come. */
export interface StatementState extends AccountFigures {
  readonly holds: ReadonlyMap<string, HoldInfo>
}

export const emptyStatementState: StatementState = {
  exists: false,
  name: "",
  createdAt: null,
  deposited: 0n,
  captured: 0n,
  held: 0n,
  holds: new Map()
}

export const balancesOf = (state: Pick<StatementState, "deposited" | "captured" | "held">): Balances => {
  const balance = state.deposited - state.captured
  return { balance, held: state.held, available: balance - state.held }
}

/** How one event moves the three figures; pure, from the event alone (BalanceMove.ts). */
export const deltaOf = (event: LedgerEvent): Balances => {
  const move = balanceMoveOf(event)
  const balance = move.deposited - move.captured
  return { balance, held: move.held, available: balance - move.held }
}

export const addBalances = (a: Balances, b: Balances): Balances => ({
  balance: a.balance + b.balance,
  held: a.held + b.held,
  available: a.available + b.available
})

const withHolds = (
  holds: ReadonlyMap<string, HoldInfo>,
  holdId: string,
  change: HoldInfo | undefined
): ReadonlyMap<string, HoldInfo> => {
  const next = new Map(holds)
  if (change === undefined) next.delete(holdId)
  else next.set(holdId, change)
  return next
}

/**
 * Folds one event: the balance fields as `evolve` moves them (BalanceMove.ts); holds are kept only while an event about them may follow:
 * a settlement is followed, in the same command, by a refund (cost < hold) or an overage (cost > hold), never both.
 */
export const evolveStatement = (state: StatementState, event: LedgerEvent): StatementState => {
  const moved = applyBalanceMove(state, event)
  switch (event.type) {
    case "AccountOpened":
      return { ...moved, exists: true, name: event.data.name, createdAt: event.data.at }
    case "FundsDeposited":
      return moved
    case "HoldPlaced": {
      const { holdId, keyId, model, plugin, requestId } = event.data
      const info: HoldInfo = {
        keyId,
        model,
        plugin,
        requestId,
        amount: amountOf(event.data.amount),
        awaiting: "resolution"
      }
      return { ...moved, holds: withHolds(state.holds, holdId, info) }
    }
    case "UsageRecalculated": {
      const hold = state.holds.get(event.data.holdId)
      if (hold === undefined) return moved
      const captured = amountOf(event.data.captured)
      const followUp = amountOf(event.data.cost) !== captured || captured < hold.amount
      return {
        ...moved,
        holds: withHolds(state.holds, event.data.holdId, followUp ? { ...hold, awaiting: "follow-up" } : undefined)
      }
    }
    case "OverageCharged":
    case "RefundIssued":
      return state.holds.has(event.data.holdId)
        ? { ...moved, holds: withHolds(state.holds, event.data.holdId, undefined) }
        : moved
  }
}

/** One event of the account's stream as a statement reads it. */
export interface StatementEvent {
  readonly globalPosition: bigint
  readonly streamPosition: bigint
  readonly recordedAt: string
  readonly metadata: Record<string, unknown>
  readonly event: LedgerEvent
}

export interface StatementEntry {
  readonly type: LedgerEvent["type"]
  readonly position: bigint
  readonly streamPosition: bigint
  readonly at: string
  readonly requestId: string | null
  readonly keyId: string | null
  readonly model: string | null
  readonly plugin: string | null
  readonly holdId: string | null
  /** Deposited, held, captured, charged or refunded; null for AccountOpened. */
  readonly amount: Micros | null
  readonly usage: unknown
  readonly delta: Balances
}

const text = (value: unknown): string | null => (typeof value === "string" ? value : null)

/** The entry for `row`, read against the state before it (which still knows the hold an entry refers to). */
export const entryOf = (before: StatementState, row: StatementEvent): StatementEntry => {
  const { event, metadata } = row
  const data = event.data as Record<string, unknown>
  const holdId = text(data.holdId)
  const hold = holdId === null ? undefined : before.holds.get(holdId)
  const amount =
    event.type === "AccountOpened"
      ? null
      : event.type === "UsageRecalculated"
        ? amountOf(event.data.captured)
        : amountOf(event.data.amount)
  return {
    type: event.type,
    position: row.globalPosition,
    streamPosition: row.streamPosition,
    at: row.recordedAt,
    requestId: text(data.requestId) ?? hold?.requestId ?? text(metadata.requestId),
    keyId: text(data.keyId) ?? hold?.keyId ?? text(metadata.keyId),
    model: text(data.model) ?? hold?.model ?? null,
    plugin: text(data.plugin) ?? hold?.plugin ?? null,
    holdId,
    amount,
    usage: event.type === "UsageRecalculated" ? (event.data.usage ?? null) : null,
    delta: deltaOf(event)
  }
}

/** An entry and the fold after it (its balances are the running figures). */
export interface StatementLine {
  readonly entry: StatementEntry
  readonly state: StatementState
}

export const stepStatement = (state: StatementState, row: StatementEvent): StatementLine => ({
  entry: entryOf(state, row),
  state: evolveStatement(state, row.event)
})

/** The lines of a range, folded on from `opening` as the events stream by. */
export const statementLines = <E, R>(
  opening: StatementState,
  events: Stream.Stream<StatementEvent, E, R>
): Stream.Stream<StatementLine, E, R> =>
  events.pipe(
    Stream.mapAccum(
      () => opening,
      (state, row) => {
        const line = stepStatement(state, row)
        return [line.state, [line]] as const
      }
    )
  )

export interface StatementRange {
  readonly from: Bound | null
  readonly to: Bound | null
}

/** A statement ready to stream: the opening fold is done, the lines are read page by page when consumed. */
export interface OpenStatement {
  readonly accountId: string
  readonly range: StatementRange
  readonly opening: StatementState
  readonly lines: Stream.Stream<StatementLine, StoreUnavailable>
}

/** Runs a statement to its end: every entry (the caller chose to hold them) and the closing fold. */
export const collectStatement = (statement: OpenStatement) =>
  Stream.runFold(
    statement.lines,
    () => ({ entries: [] as Array<StatementEntry>, closing: statement.opening }),
    (acc, line) => {
      acc.entries.push(line.entry)
      return { entries: acc.entries, closing: line.state }
    }
  )

export class Statements extends Context.Service<
  Statements,
  {
    /** Unknown account → LedgerRejected AccountNotFound. */
    readonly open: (
      accountId: string,
      range: StatementRange
    ) => Effect.Effect<OpenStatement, LedgerRejected | StoreUnavailable>
    /** The fold of every event up to `asOf` (inclusive); AccountNotFound when the account did not exist yet. */
    readonly asOf: (accountId: string, asOf: Bound) => Effect.Effect<StatementState, LedgerRejected | StoreUnavailable>
  }
>()("tollgate/app/Statements") {}
