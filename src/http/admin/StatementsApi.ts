/**
 * `GET /admin/accounts/{id}/statement?from=&to=&format=json|csv`: the account's entries over a range with opening and
 * closing figures, folded from the events. Both formats stream, page by page, as the events are read: nothing holds
 * the whole range (the JSON body puts `closing` after `entries` for that reason). Deltas are signed decimal strings
 * with an explicit sign ("+1.000000", "-0.052000", "0.000000").
 */
import { Effect, Layer, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import {
  type Balances,
  balancesOf,
  boundView,
  type OpenStatement,
  parseBound,
  type StatementEntry,
  type StatementState,
  Statements
} from "../../app/Statements.ts"
import { formatMicros, formatSignedMicros } from "../../domain/Money.ts"
import { badRequest } from "../ApiError.ts"
import { route } from "../Route.ts"
import { admin } from "./AdminApi.ts"

export const balancesView = (balances: Balances) => ({
  balance: formatMicros(balances.balance),
  held: formatMicros(balances.held),
  available: formatMicros(balances.available)
})

export const deltaView = (delta: Balances) => ({
  balance: formatSignedMicros(delta.balance),
  held: formatSignedMicros(delta.held),
  available: formatSignedMicros(delta.available)
})

export const entryView = (entry: StatementEntry) => ({
  type: entry.type,
  position: Number(entry.position),
  streamPosition: Number(entry.streamPosition),
  at: entry.at,
  requestId: entry.requestId,
  keyId: entry.keyId,
  model: entry.model,
  plugin: entry.plugin,
  holdId: entry.holdId,
  amount: entry.amount === null ? null : formatMicros(entry.amount),
  usage: entry.usage ?? null,
  delta: deltaView(entry.delta)
})

export const CSV_COLUMNS = [
  "type",
  "position",
  "streamPosition",
  "at",
  "requestId",
  "keyId",
  "model",
  "plugin",
  "holdId",
  "amount",
  "usage",
  "deltaBalance",
  "deltaHeld",
  "deltaAvailable"
] as const

const csvField = (value: string | number | null): string => {
  if (value === null) return ""
  const text = String(value)
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

export const csvLine = (entry: StatementEntry): string => {
  const view = entryView(entry)
  return `${[
    view.type,
    view.position,
    view.streamPosition,
    view.at,
    view.requestId,
    view.keyId,
    view.model,
    view.plugin,
    view.holdId,
    view.amount,
    view.usage === null ? null : JSON.stringify(view.usage),
    view.delta.balance,
    view.delta.held,
    view.delta.available
  ]
    .map(csvField)
    .join(",")}\r\n`
}

/** A query bound, or a 400 naming the parameter. */
const boundParam = (url: URL, name: string) =>
  Effect.gen(function* () {
    const raw = url.searchParams.get(name)
    if (raw === null || raw === "") return null
    const bound = parseBound(raw)
    if (bound === undefined) {
      return yield* badRequest(
        `${name} must be an ISO 8601 instant (such as "2026-01-31T00:00:00Z") or a global position (digits only)`,
        name,
        "invalid_parameter"
      )
    }
    return bound
  })

const csvBody = (statement: OpenStatement) =>
  Stream.concat(
    Stream.succeed(`${CSV_COLUMNS.join(",")}\r\n`),
    // One write per page of events rather than one per line.
    statement.lines.pipe(Stream.mapArray((lines) => [lines.map((line) => csvLine(line.entry)).join("")] as const))
  )

const jsonBody = (statement: OpenStatement) => {
  const head = JSON.stringify({
    accountId: statement.accountId,
    from: boundView(statement.range.from),
    to: boundView(statement.range.to),
    opening: balancesView(balancesOf(statement.opening))
  })
  return Stream.concat(
    Stream.succeed(`${head.slice(0, -1)},"entries":[`),
    statement.lines.pipe(
      Stream.mapAccum(
        () => ({ first: true, closing: statement.opening as StatementState }),
        (acc, line) => {
          const text = `${acc.first ? "" : ","}${JSON.stringify(entryView(line.entry))}`
          return [{ first: false, closing: line.state }, [text]] as const
        },
        { onHalt: (acc) => [`],"closing":${JSON.stringify(balancesView(balancesOf(acc.closing)))}}`] }
      ),
      Stream.mapArray((texts) => [texts.join("")] as const)
    )
  )
}

export const layer = Layer.mergeAll(
  route(
    "GET",
    "/admin/accounts/:id/statement",
    admin(
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const url = new URL(request.url, "http://x")
        const accountId = (yield* HttpRouter.params).id ?? ""
        const from = yield* boundParam(url, "from")
        const to = yield* boundParam(url, "to")
        const format = url.searchParams.get("format") ?? "json"
        if (format !== "json" && format !== "csv") {
          return yield* badRequest("format must be json or csv", "format", "invalid_parameter")
        }
        // Opening the statement checks the account and folds the opening balance, so a 404 is still a 404.
        const statement = yield* (yield* Statements).open(accountId, { from, to })
        return format === "csv"
          ? HttpServerResponse.stream(Stream.encodeText(csvBody(statement)), {
              contentType: "text/csv; charset=utf-8",
              headers: { "content-disposition": `attachment; filename="statement-${accountId}.csv"` }
            })
          : HttpServerResponse.stream(Stream.encodeText(jsonBody(statement)), {
              contentType: "application/json"
            })
      })
    )
  )
)
