import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { AdminClient } from "../AdminClient.ts"
import { printAnswer } from "../Output.ts"
import { amountArgument, nonBlankFlag } from "../Params.ts"
import { depositView, generatedReferenceNote } from "../Views.ts"

// A retried deposit must carry the same reference to be counted once, so a generated one is always printed.
// crypto, not `Random`: a collision would silently swallow a real deposit.
const generateReference = Effect.sync(() => `dep_${globalThis.crypto.randomUUID().replaceAll("-", "")}`)

export const deposit = Command.make(
  "deposit",
  {
    accountId: Argument.String("accountId").pipe(Argument.withDescription("The account to credit")),
    amount: amountArgument("amount").pipe(
      Argument.withDescription("Dollars as a decimal, at most 6 decimals, e.g. 12.50")
    ),
    reference: nonBlankFlag("reference").pipe(
      Flag.withDescription("External reference that makes the deposit idempotent (default: a new random one)"),
      Flag.optional
    )
  },
  Effect.fn("deposit")(function* ({ accountId, amount, reference }) {
    const admin = yield* AdminClient
    const generatedReference = Option.isNone(reference)
    const ref = Option.isSome(reference) ? reference.value : yield* generateReference
    // Printed before the call, on stderr, so the reference survives a failed or interrupted request.
    if (generatedReference) yield* Console.error(generatedReferenceNote(ref))
    const answer = yield* admin.deposit(accountId, { amount, reference: ref })
    yield* printAnswer(answer, (recorded) => depositView(recorded, { alreadyRecorded: answer.status === 200 }))
  })
).pipe(
  Command.withDescription("Deposit funds into an account (POST /admin/accounts/{id}/deposits)"),
  Command.withExamples([
    { command: "tollgate deposit acc_123 25.00 --reference invoice-2041", description: "Credit $25 once" }
  ]),
  Command.provide(AdminClient.layer)
)
