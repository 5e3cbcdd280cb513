import { Console, Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { AdminClient } from "../AdminClient.ts"
import { ReplayMismatch } from "../CliErrors.ts"
import { JsonOutput } from "../CliSettings.ts"
import { printAnswer } from "../Output.ts"
import { replayView } from "../Views.ts"

export const replay = Command.make(
  "replay",
  {
    // A required flag (no default) rather than implied, so a future rebuilding mode cannot be triggered by a bare
    // `tollgate replay`.
    verify: Flag.Boolean("verify").pipe(
      Flag.withDescription("Replay every event and compare the result with the live projections (required)")
    )
  },
  Effect.fn("replay")(function* () {
    const admin = yield* AdminClient
    const answer = yield* admin.replay
    yield* printAnswer(answer, replayView)
    if (!answer.value.ok) {
      if (yield* JsonOutput) yield* Console.error(replayView(answer.value))
      return yield* new ReplayMismatch({ mismatches: answer.value.mismatches?.length ?? 0 })
    }
  })
).pipe(
  Command.withDescription("Check that replaying all events reproduces the projections (POST /admin/replay)"),
  Command.withExamples([{ command: "tollgate replay --verify", description: "Exit 1 and list mismatches if any" }]),
  Command.provide(AdminClient.layer)
)
