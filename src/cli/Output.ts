/**
 * Where command results go: the server's JSON as-is with `--json`, the human view otherwise. Commands send notes meant
 * for a person (warnings, hints) to stderr under `--json`, so stdout stays machine-readable.
 */
import { Console, Effect } from "effect"
import type { AdminAnswer } from "./AdminClient.ts"
import { JsonOutput } from "./CliSettings.ts"

export const printJson = (body: unknown) => Console.log(JSON.stringify(body, null, 2))

export const printAnswer = Effect.fnUntraced(function* <A>(answer: AdminAnswer<A>, view: (value: A) => string) {
  yield* (yield* JsonOutput) ? printJson(answer.body) : Console.log(view(answer.value))
})
