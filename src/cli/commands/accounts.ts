import { Effect } from "effect"
import { Argument, Command } from "effect/cli"
import { AdminClient } from "../AdminClient.ts"
import { printAnswer } from "../Output.ts"
import { nonBlankArgument } from "../Params.ts"
import { accountCreatedView, accountDetailsView, accountListView } from "../Views.ts"

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
  { accountId: Argument.String("accountId").pipe(Argument.withDescription("The account id")) },
  Effect.fn("accounts.show")(function* ({ accountId }) {
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
