import { Effect, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { AccountDetails } from "../AdminApi.ts"
import { AdminClient } from "../AdminClient.ts"
import { UnexpectedResponse } from "../CliErrors.ts"
import { ServerUrl } from "../CliSettings.ts"
import { printAnswer } from "../Output.ts"
import { nonBlankArgument } from "../Params.ts"
import { accountCreatedView, accountDetailsView, accountListView } from "../Views.ts"
import { adminRequest } from "../AdminRequest.ts"

const create = Command.make(
  "create",
  { name: nonBlankArgument("name").pipe(Argument.withDescription("A name for the account, e.g. the customer")) },
  Effect.fn("accounts.create")(function* ({ name }) {
    const admin = yield* AdminClient
    yield* printAnswer(yield* admin.createAccount(name), accountCreatedView)
  })
).pipe(
  Command.withDescription("Create an account (POST /admin/accounts)"),
  Command.withExamples([{ command: 'tollgate accounts create "Acme Inc"', description: "Create an account" }]),
  Command.provide(AdminClient.layer)
)

const show = Command.make(
  "show",
  {
    accountId: Argument.String("accountId").pipe(Argument.withDescription("The account id")),
    asOf: Flag.String("as-of").pipe(
      Flag.withDescription("The balance as it was then: an ISO 8601 instant or a global position (inclusive)"),
      Flag.optional
    )
  },
  Effect.fn("accounts.show")(function* ({ accountId, asOf }) {
    if (Option.isSome(asOf)) {
      const text = yield* adminRequest(`/admin/accounts/${encodeURIComponent(accountId)}`, {
        urlParams: { asOf: asOf.value }
      })
      const decoded = Schema.decodeUnknownOption(Schema.fromJsonString(AccountDetails))(text)
      if (Option.isNone(decoded)) {
        return yield* new UnexpectedResponse({ url: yield* ServerUrl, status: 200, detail: "not an account" })
      }
      return yield* printAnswer({ status: 200, body: JSON.parse(text), value: decoded.value }, accountDetailsView)
    }
    const admin = yield* AdminClient
    yield* printAnswer(yield* admin.showAccount(accountId), accountDetailsView)
  })
).pipe(
  Command.withDescription("Show an account and its balance (GET /admin/accounts/{id})"),
  Command.provide(AdminClient.layer)
)

const list = Command.make(
  "list",
  {},
  Effect.fn("accounts.list")(function* () {
    const admin = yield* AdminClient
    yield* printAnswer(yield* admin.listAccounts, accountListView)
  })
).pipe(
  Command.withDescription("List accounts with their available balance (GET /admin/accounts)"),
  Command.withAlias("ls"),
  Command.provide(AdminClient.layer)
)

export const accounts = Command.make("accounts").pipe(
  Command.withDescription("Create, show and list accounts"),
  Command.withSubcommands([create, show, list])
)
