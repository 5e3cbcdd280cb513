/**
 * How each admin API answer reads in a terminal. Pure functions from decoded answers to text, so the layout is tested
 * without a server.
 */
import { DateTime, Option } from "effect"
import type {
  AccountCreated,
  AccountDetails,
  AccountList,
  AccountSummary,
  Balance,
  DepositRecorded,
  KeyCreated,
  KeyRevoked,
  KeySummary,
  LedgerEntry,
  ReplayReport
} from "./AdminApi.ts"
import { type Column, renderFields, renderTable } from "./Table.ts"

const none = "-"
const orNone = (value: string | null | undefined) =>
  value === undefined || value === null || value === "" ? none : value

const modelsText = (models: ReadonlyArray<string> | null | undefined) =>
  models === undefined || models === null || models.length === 0 ? "all" : models.join(",")

const balanceFields = (balance: Balance): ReadonlyArray<readonly [string, string]> => [
  ["deposited", balance.deposited],
  ["captured", balance.captured],
  ["held", balance.held],
  ["available", balance.available]
]

export const accountCreatedView = (account: AccountCreated): string =>
  [
    `Created account ${account.id}.`,
    renderFields([
      ["id", account.id],
      ["name", account.name],
      ["created", orNone(account.createdAt)]
    ]),
    `Next: tollgate deposit ${account.id} <amount>`
  ].join("\n")

export const accountDetailsView = (account: AccountDetails): string =>
  renderFields([
    ["id", account.id],
    ["name", account.name],
    ["created", orNone(account.createdAt)],
    ...balanceFields(account.balance)
  ])

const listedBalance = (balance: AccountSummary["balance"]) =>
  balance === undefined || balance === null ? none : typeof balance === "string" ? balance : balance.available

const accountColumns: ReadonlyArray<Column<AccountSummary>> = [
  { header: "ID", cell: (account) => account.id },
  { header: "NAME", cell: (account) => account.name },
  { header: "AVAILABLE", align: "right", cell: (account) => listedBalance(account.balance) },
  { header: "CREATED", cell: (account) => orNone(account.createdAt) }
]

export const accountListView = (list: AccountList): string =>
  list.data.length === 0
    ? "No accounts yet. Create one with: tollgate accounts create <name>"
    : renderTable(accountColumns, list.data)

export const depositView = (deposit: DepositRecorded, context: { readonly alreadyRecorded: boolean }): string =>
  [
    context.alreadyRecorded
      ? `Deposit ${deposit.reference} was already recorded; nothing new was deposited.`
      : `Deposited ${deposit.amount} to ${deposit.accountId}.`,
    renderFields([
      ["reference", deposit.reference],
      ...(deposit.balance === undefined ? [] : balanceFields(deposit.balance))
    ])
  ].join("\n")

export const generatedReferenceNote = (reference: string): string =>
  `Generated reference ${reference}; to retry this deposit safely, pass --reference ${reference}`

export const keyCreatedView = (key: KeyCreated): string =>
  [
    `Created key ${key.id} for account ${key.accountId}.`,
    renderFields([
      ["name", key.name],
      ["models", modelsText(key.models)],
      ["expires", orNone(key.expiresAt)],
      ["spend limit", orNone(key.spendLimit)]
    ]),
    "",
    `  ${key.key}`,
    ""
  ].join("\n")

export const keyShownOnceWarning = "Copy this key now: it will not be shown again."

/** `now` in epoch milliseconds, from the caller's `Clock`. */
export const keyStatus = (key: KeySummary, now: number): string => {
  if (key.revokedAt !== undefined && key.revokedAt !== null) return "revoked"
  const expires = Option.flatMap(Option.fromNullishOr(key.expiresAt), (at) => DateTime.make(at))
  if (Option.isSome(expires) && DateTime.toEpochMillis(expires.value) <= now) return "expired"
  return "active"
}

const keyColumns = (now: number): ReadonlyArray<Column<KeySummary>> => [
  { header: "ID", cell: (key) => key.id },
  { header: "NAME", cell: (key) => key.name },
  { header: "PREFIX", cell: (key) => orNone(key.prefix) },
  { header: "MODELS", cell: (key) => modelsText(key.models) },
  { header: "SPENT", align: "right", cell: (key) => orNone(key.spent) },
  { header: "LIMIT", align: "right", cell: (key) => orNone(key.spendLimit) },
  { header: "EXPIRES", cell: (key) => orNone(key.expiresAt) },
  { header: "LAST USED", cell: (key) => orNone(key.lastUsedAt) },
  { header: "STATUS", cell: (key) => keyStatus(key, now) }
]

export const keyListView = (keys: ReadonlyArray<KeySummary>, now: number): string =>
  keys.length === 0
    ? "No keys for this account. Create one with: tollgate keys create <accountId> --name <name>"
    : renderTable(keyColumns(now), keys)

export const keyRevokedView = (key: KeyRevoked): string =>
  `Revoked key ${key.id}${key.revokedAt === undefined || key.revokedAt === null ? "" : ` at ${key.revokedAt}`}.`

const ledgerColumns: ReadonlyArray<Column<LedgerEntry>> = [
  { header: "POSITION", align: "right", cell: (entry) => String(entry.position) },
  { header: "TYPE", cell: (entry) => entry.type },
  { header: "AMOUNT", align: "right", cell: (entry) => orNone(entry.amount) },
  { header: "MODEL", cell: (entry) => orNone(entry.model) },
  { header: "KEY", cell: (entry) => orNone(entry.keyId) },
  { header: "REQUEST", cell: (entry) => orNone(entry.requestId) },
  { header: "HOLD", cell: (entry) => orNone(entry.holdId) },
  { header: "AT", cell: (entry) => orNone(entry.at) }
]

export const ledgerView = (entries: ReadonlyArray<LedgerEntry>): string =>
  entries.length === 0 ? "No ledger entries." : renderTable(ledgerColumns, entries)

export const ledgerNextPageHint = (accountId: string, next: number | string): string =>
  `More entries: tollgate ledger ${accountId} --after ${next} (or --all)`

const compact = (value: unknown) => (typeof value === "string" ? value : (JSON.stringify(value) ?? String(value)))

const mismatchText = (mismatch: unknown): string => {
  if (typeof mismatch !== "object" || mismatch === null) return compact(mismatch)
  const { table, key, live, replayed } = mismatch as Record<string, unknown>
  if (typeof table === "string" && key !== undefined) {
    return `${table} ${compact(key)}: live ${compact(live)}, replayed ${compact(replayed)}`
  }
  return Object.entries(mismatch)
    .map(([field, value]) => `${field}=${compact(value)}`)
    .join(" ")
}

export const replayView = (report: ReplayReport): string => {
  const counted = [
    ...(report.events === undefined ? [] : [`${report.events} events`]),
    ...(report.accounts === undefined ? [] : [`${report.accounts} accounts`])
  ].join(", ")
  const scope = counted === "" ? "" : ` (${counted})`
  const mismatches = report.mismatches ?? []
  if (report.ok) return `Replay verified${scope}: the projections match the events.`
  return [
    `Replay found ${mismatches.length} mismatch${mismatches.length === 1 ? "" : "es"}${scope}:`,
    ...mismatches.map((mismatch) => `  - ${mismatchText(mismatch)}`)
  ].join("\n")
}

/** A replay report with its timing, per-table row counts and (after `--apply`) what was rewritten. */
export interface ReplaySummary extends ReplayReport {
  readonly durationMs?: number | undefined
  readonly eventsPerSecond?: number | undefined
  readonly tables?: Readonly<Record<string, number>> | undefined
  readonly repaired?: Readonly<Record<string, { readonly written: number; readonly deleted: number }>> | undefined
  readonly caughtUp?: number | undefined
  readonly pauseMs?: number | undefined
}

export const replaySummaryView = (report: ReplaySummary, mode: "verify" | "apply"): string => {
  const timing =
    report.durationMs === undefined
      ? []
      : [
          `${(report.durationMs / 1000).toFixed(1)} s, ${report.eventsPerSecond ?? 0} events/s` +
            (report.pauseMs === undefined ? "" : `, writers paused ${report.pauseMs} ms`) +
            (report.caughtUp === undefined ? "" : `, ${report.caughtUp} events caught up under the lock`)
        ]
  const tables = Object.entries(report.tables ?? {}).map(([table, rows]) => ({
    table,
    rows,
    ...report.repaired?.[table]
  }))
  const table =
    tables.length === 0
      ? []
      : [
          renderTable<(typeof tables)[number]>(
            [
              { header: "TABLE", cell: (r) => r.table },
              { header: "ROWS", align: "right", cell: (r) => String(r.rows) },
              ...(report.repaired === undefined
                ? []
                : [
                    {
                      header: "REWRITTEN",
                      align: "right" as const,
                      cell: (r: (typeof tables)[number]) => String(r.written ?? 0)
                    },
                    {
                      header: "DELETED",
                      align: "right" as const,
                      cell: (r: (typeof tables)[number]) => String(r.deleted ?? 0)
                    }
                  ])
            ],
            tables
          )
        ]
  if (mode === "verify") return [replayView(report), ...timing, ...table].join("\n")
  const found = report.mismatches?.length ?? 0
  return [
    `Projections rebuilt in place (${report.events ?? 0} events, ${report.accounts ?? 0} accounts); ` +
      `${found === 0 ? "no row differed" : `${found} differing row${found === 1 ? "" : "s"} repaired`}.`,
    ...(report.mismatches ?? []).map((mismatch) => `  - ${mismatchText(mismatch)}`),
    ...timing,
    ...table
  ].join("\n")
}
