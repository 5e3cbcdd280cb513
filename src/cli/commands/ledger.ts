import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { LedgerEntry } from "../AdminApi.ts"
import { AdminClient } from "../AdminClient.ts"
import { UnexpectedResponse } from "../CliErrors.ts"
import { JsonOutput } from "../CliSettings.ts"
import { printAnswer, printJson } from "../Output.ts"
import { ledgerNextPageHint, ledgerView } from "../Views.ts"

type Cursor = number | string

/** The page's `data` as sent; the decoded page has already proven it is an array. */
const rawData = (body: unknown): ReadonlyArray<unknown> => (body as { readonly data: ReadonlyArray<unknown> }).data

export const ledger = Command.make(
  "ledger",
  {
    accountId: Argument.String("accountId").pipe(Argument.withDescription("The account whose ledger to read")),
    after: Flag.Int("after").pipe(
      Flag.withDescription("Start after this position (the `next` of the previous page)"),
      Flag.filter(
        (after) => after >= 0,
        () => "a position of 0 or more"
      ),
      Flag.optional
    ),
    limit: Flag.Int("limit").pipe(
      Flag.withDescription("Entries per page (the server caps it)"),
      Flag.filter(
        (limit) => limit >= 1,
        () => "a page size of 1 or more"
      ),
      Flag.optional
    ),
    all: Flag.Boolean("all").pipe(Flag.withDescription("Follow `next` and print every page"), Flag.withDefault(false))
  },
  Effect.fn("ledger")(function* ({ accountId, after, limit, all }) {
    const admin = yield* AdminClient
    const pageSize = Option.getOrUndefined(limit)
    const first = yield* admin.ledgerPage(accountId, { after: Option.getOrUndefined(after), limit: pageSize })
    if (!all) {
      yield* printAnswer(first, (page) => ledgerView(page.data))
      const next = first.value.next
      if (next !== undefined && next !== null && !(yield* JsonOutput)) {
        yield* Console.log(ledgerNextPageHint(accountId, next))
      }
      return
    }
    const entries: Array<LedgerEntry> = [...first.value.data]
    // --json prints the entries as the server sent them, fields the CLI does not know included.
    const rawEntries: Array<unknown> = [...rawData(first.body)]
    let next: Cursor | null | undefined = first.value.next
    const visited = new Set<string>()
    while (next !== undefined && next !== null) {
      // A server handing back a cursor it already gave would otherwise page forever.
      if (visited.has(String(next))) {
        return yield* new UnexpectedResponse({
          url: admin.url,
          status: 200,
          detail: `the ledger cursor ${next} repeated`
        })
      }
      visited.add(String(next))
      const page = yield* admin.ledgerPage(accountId, { after: next, limit: pageSize })
      entries.push(...page.value.data)
      rawEntries.push(...rawData(page.body))
      next = page.value.next
    }
    yield* (yield* JsonOutput) ? printJson({ data: rawEntries, next: null }) : Console.log(ledgerView(entries))
  })
).pipe(
  Command.withDescription("Read an account's ledger, oldest first (GET /admin/accounts/{id}/ledger)"),
  Command.withExamples([
    { command: "tollgate ledger acc_123 --limit 50", description: "The first 50 entries" },
    { command: "tollgate ledger acc_123 --all --json", description: "Every entry, as JSON" }
  ]),
  Command.provide(AdminClient.layer)
)
