/**
 * Statements on Postgres/PGlite: bounds resolve to stream positions first, then the stream is read in pages keyed on
 * `stream_position` (the `UNIQUE (stream_name, stream_position)` index), so no query holds more than one page and the
 * range is fixed when the statement opens (events appended meanwhile are not in it). Columns are selected by name.
 */
import { Effect, Layer, Option, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { LedgerRejected } from "../../app/LedgerErrors.ts"
import {
  type Bound,
  emptyStatementState,
  evolveStatement,
  type StatementEvent,
  type StatementRange,
  type StatementState,
  Statements,
  statementLines
} from "../../app/Statements.ts"
import { accountStream, isUuid } from "../../domain/Ids.ts"
import { isLedgerEventType, type LedgerEvent } from "../../domain/ledger/LedgerEvent.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { traced } from "../../app/Traced.ts"

export const PAGE_SIZE = 1_000

interface StatementRow {
  readonly global_position: bigint
  readonly stream_position: bigint
  readonly event_type: string
  readonly data: unknown
  readonly metadata: Record<string, unknown>
  readonly recorded_at: Date
}

const toStatementEvent = (row: StatementRow): StatementEvent => ({
  globalPosition: row.global_position,
  streamPosition: row.stream_position,
  recordedAt: row.recorded_at.toISOString(),
  metadata: row.metadata ?? {},
  event: { type: row.event_type, data: row.data } as LedgerEvent
})

const notFound = (accountId: string, detail = "does not exist") =>
  new LedgerRejected({ reason: "AccountNotFound", message: `account ${accountId} ${detail}` })

/** Whether the first event out of a prefix is the first at or past the bound (`at`), or the first strictly past it. */
type Edge = "at" | "past"

export const layer = Layer.effect(
  Statements,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const lastPosition = (stream: string) =>
      sql<{ readonly last: bigint | null }>`
        SELECT max(stream_position) AS last FROM events WHERE stream_name = ${stream}`.pipe(
        orUnavailable,
        Effect.map((rows) => rows[0]?.last ?? null)
      )

    /** The stream position of the first event at (or past) `bound`; null when no event is. */
    const firstBeyond = (stream: string, bound: Bound, edge: Edge) => {
      const query =
        bound._tag === "Position"
          ? edge === "at"
            ? sql<{ readonly first: bigint | null }>`
                SELECT min(stream_position) AS first FROM events
                WHERE stream_name = ${stream} AND global_position >= ${bound.position}`
            : sql<{ readonly first: bigint | null }>`
                SELECT min(stream_position) AS first FROM events
                WHERE stream_name = ${stream} AND global_position > ${bound.position}`
          : edge === "at"
            ? sql<{ readonly first: bigint | null }>`
                SELECT min(stream_position) AS first FROM events
                WHERE stream_name = ${stream} AND recorded_at >= ${bound.at}::timestamptz`
            : sql<{ readonly first: bigint | null }>`
                SELECT min(stream_position) AS first FROM events
                WHERE stream_name = ${stream} AND recorded_at > ${bound.at}::timestamptz`
      return query.pipe(
        orUnavailable,
        Effect.map((rows) => rows[0]?.first ?? null)
      )
    }

    /** The last stream position of the prefix that ends just before the first event at/past `bound`. */
    const endBefore = Effect.fnUntraced(function* (stream: string, bound: Bound, edge: Edge, last: bigint) {
      const first = yield* firstBeyond(stream, bound, edge)
      return first === null ? last : first - 1n
    })

    const page = (stream: string, after: bigint, through: bigint) =>
      sql<StatementRow>`
        SELECT global_position, stream_position, event_type, data, metadata, recorded_at FROM events
        WHERE stream_name = ${stream} AND stream_position > ${after} AND stream_position <= ${through}
        ORDER BY stream_position LIMIT ${PAGE_SIZE}`.pipe(orUnavailable)

    /** Events in (after, through], oldest first, one page per query; only ledger events. */
    const events = (stream: string, after: bigint, through: bigint) =>
      Stream.paginate(after, (cursor: bigint) =>
        cursor >= through
          ? Effect.succeed([[], Option.none<bigint>()] as const)
          : Effect.map(page(stream, cursor, through), (rows) => {
              const next =
                rows.length < PAGE_SIZE ? Option.none<bigint>() : Option.some(rows[rows.length - 1].stream_position)
              const ledgerRows = rows.filter((row) => isLedgerEventType(row.event_type)).map(toStatementEvent)
              return [ledgerRows, next] as const
            })
      )

    const foldThrough = (stream: string, through: bigint) =>
      Stream.runFold(
        events(stream, 0n, through),
        (): StatementState => emptyStatementState,
        (state, row) => evolveStatement(state, row.event)
      )

    const existing = Effect.fnUntraced(function* (accountId: string) {
      if (!isUuid(accountId)) return yield* notFound(accountId)
      const stream = accountStream(accountId)
      const last = yield* lastPosition(stream)
      if (last === null) return yield* notFound(accountId)
      return { stream, last }
    })

    const open = Effect.fnUntraced(function* (accountId: string, range: StatementRange) {
      const { stream, last } = yield* existing(accountId)
      const firstIn = range.from === null ? 1n : ((yield* firstBeyond(stream, range.from, "at")) ?? last + 1n)
      // `to`: an instant is exclusive (the first event at it is out), a position inclusive.
      const through =
        range.to === null ? last : yield* endBefore(stream, range.to, range.to._tag === "Instant" ? "at" : "past", last)
      const openingThrough = firstIn - 1n
      const opening = yield* foldThrough(stream, openingThrough)
      const linesFrom = openingThrough > through ? through : openingThrough
      return { accountId, range, opening, lines: statementLines(opening, events(stream, linesFrom, through)) }
    }, traced("Statements.open"))

    const asOf = Effect.fnUntraced(function* (accountId: string, bound: Bound) {
      const { stream, last } = yield* existing(accountId)
      const through = yield* endBefore(stream, bound, "past", last)
      const state = yield* foldThrough(stream, through)
      if (!state.exists)
        return yield* notFound(
          accountId,
          `did not exist at ${bound._tag === "Position" ? `position ${bound.position}` : bound.at}`
        )
      return state
    }, traced("Statements.asOf"))

    return Statements.of({ open, asOf })
  })
)
