/**
 * `tollgate statement <accountId> [--from] [--to] [--csv]` (GET /admin/accounts/{id}/statement), and the point-in-time
 * read `accounts show --as-of` shares its request helper. Both are plain GETs whose answers the CLI prints as sent
 * (CSV verbatim) or as a short table, through `adminRequest`.
 */
import { Console, Effect, Option, Result, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { adminRequest } from "../AdminRequest.ts"
import { UnexpectedResponse } from "../CliErrors.ts"
import { JsonOutput, ServerUrl } from "../CliSettings.ts"

const parseJson = Schema.decodeUnknownResult(Schema.fromJsonString(Schema.Unknown))

interface Figures {
  readonly balance: string
  readonly held: string
  readonly available: string
}

interface StatementBody {
  readonly opening: Figures
  readonly closing: Figures
  readonly entries: ReadonlyArray<{
    readonly type: string
    readonly position: number
    readonly at: string
    readonly model: string | null
    readonly amount: string | null
    readonly delta: Figures
  }>
}

const pad = (rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)))
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]))
        .join("  ")
        .trimEnd()
    )
    .join("\n")
}

export const statementView = (body: StatementBody): string => {
  const figures = (label: string, f: Figures) =>
    `${label}: balance ${f.balance}, held ${f.held}, available ${f.available}`
  const rows = [
    ["POSITION", "AT", "TYPE", "MODEL", "AMOUNT", "Δ BALANCE", "Δ HELD", "Δ AVAILABLE"],
    ...body.entries.map((e) => [
      String(e.position),
      e.at,
      e.type,
      e.model ?? "",
      e.amount ?? "",
      e.delta.balance,
      e.delta.held,
      e.delta.available
    ])
  ]
  return [figures("opening", body.opening), pad(rows), figures("closing", body.closing)].join("\n")
}

const bound = (name: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)

export const statement = Command.make(
  "statement",
  {
    accountId: Argument.String("accountId").pipe(Argument.withDescription("The account")),
    from: bound("from", "Start (inclusive): an ISO 8601 instant or a global position"),
    to: bound("to", "End: an ISO 8601 instant (exclusive) or a global position (inclusive)"),
    csv: Flag.Boolean("csv").pipe(Flag.withDescription("Print the entries as CSV"), Flag.withDefault(false))
  },
  Effect.fn("statement")(function* ({ accountId, from, to, csv }) {
    const params: Record<string, string> = {
      ...(Option.isSome(from) ? { from: from.value } : {}),
      ...(Option.isSome(to) ? { to: to.value } : {}),
      ...(csv ? { format: "csv" } : {})
    }
    const text = yield* adminRequest(`/admin/accounts/${encodeURIComponent(accountId)}/statement`, {
      urlParams: params
    })
    if (csv || (yield* JsonOutput)) return yield* Console.log(text.trimEnd())
    const parsed = parseJson(text)
    if (Result.isFailure(parsed)) {
      return yield* new UnexpectedResponse({ url: yield* ServerUrl, status: 200, detail: "the body is not JSON" })
    }
    yield* Console.log(statementView(parsed.success as StatementBody))
  })
).pipe(
  Command.withDescription("An account statement: opening, entries with signed deltas, closing (GET …/statement)"),
  Command.withExamples([
    {
      command: "tollgate statement acc_123 --from 2026-01-01T00:00:00Z --to 2026-02-01T00:00:00Z",
      description: "January"
    },
    { command: "tollgate statement acc_123 --csv > statement.csv", description: "Everything, as CSV" }
  ])
)
