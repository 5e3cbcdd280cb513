import { Clock, Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { AdminClient } from "../AdminClient.ts"
import { JsonOutput } from "../CliSettings.ts"
import { printAnswer } from "../Output.ts"
import { amountFlag, futureInstantFlag, nonBlankFlag } from "../Params.ts"
import { keyCreatedView, keyListView, keyRevokedView, keyShownOnceWarning } from "../Views.ts"

const create = Command.make(
  "create",
  {
    accountId: Argument.String("accountId").pipe(Argument.withDescription("The account the key spends from")),
    name: nonBlankFlag("name").pipe(Flag.withDescription("A name to recognise the key by")),
    models: Flag.String("model").pipe(
      Flag.withDescription("Allow only this model; repeat for several (default: all models)"),
      Flag.atLeast(0)
    ),
    expiresAt: futureInstantFlag("expires-at").pipe(
      Flag.withDescription("Stop accepting the key at this time (ISO 8601)"),
      Flag.optional
    ),
    spendLimit: amountFlag("spend-limit").pipe(
      Flag.withDescription("Most the key may spend in total, in dollars, e.g. 5.00"),
      Flag.optional
    )
  },
  Effect.fn("keys.create")(function* ({ accountId, name, models, expiresAt, spendLimit }) {
    const admin = yield* AdminClient
    const answer = yield* admin.createKey(accountId, {
      name,
      ...(models.length === 0 ? {} : { models }),
      ...(Option.isSome(expiresAt) ? { expiresAt: expiresAt.value } : {}),
      ...(Option.isSome(spendLimit) ? { spendLimit: spendLimit.value } : {})
    })
    yield* printAnswer(answer, keyCreatedView)
    // On stderr under --json so a script can pipe stdout straight into a secret store.
    yield* (yield* JsonOutput) ? Console.error(keyShownOnceWarning) : Console.log(keyShownOnceWarning)
  })
).pipe(
  Command.withDescription("Create an API key; the secret is printed once (POST /admin/accounts/{id}/keys)"),
  Command.withExamples([
    {
      command: "tollgate keys create acc_123 --name ci --model gpt-4o-mini --spend-limit 5.00",
      description: "A key limited to one model and $5"
    }
  ]),
  Command.provide(AdminClient.layer)
)

const list = Command.make(
  "list",
  { accountId: Argument.String("accountId").pipe(Argument.withDescription("The account whose keys to list")) },
  Effect.fn("keys.list")(function* ({ accountId }) {
    const admin = yield* AdminClient
    const answer = yield* admin.listKeys(accountId)
    const now = yield* Clock.currentTimeMillis
    yield* printAnswer(answer, (list) => keyListView(list.data, now))
  })
).pipe(
  Command.withDescription("List an account's keys, without their secrets (GET /admin/accounts/{id}/keys)"),
  Command.withAlias("ls"),
  Command.provide(AdminClient.layer)
)

const revoke = Command.make(
  "revoke",
  { keyId: Argument.String("keyId").pipe(Argument.withDescription("The key id (not the secret)")) },
  Effect.fn("keys.revoke")(function* ({ keyId }) {
    const admin = yield* AdminClient
    yield* printAnswer(yield* admin.revokeKey(keyId), keyRevokedView)
  })
).pipe(
  Command.withDescription("Revoke a key; requests with it are refused from now on (DELETE /admin/keys/{keyId})"),
  Command.provide(AdminClient.layer)
)

export const keys = Command.make("keys").pipe(
  Command.withDescription("Create, list and revoke API keys"),
  Command.withSubcommands([create, list, revoke])
)
