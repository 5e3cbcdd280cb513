/**
 * `tollgate batches`: every account's batches through the admin API (`/admin/batches`): list (by account, status),
 * show, cancel, and tail — a batch followed to its end with a progress bar of its lines (the same display as
 * `videos create --wait`), then its final counts and money.
 */
import { Console, Duration, Effect, Option, Schedule } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { AdminClient } from "../AdminClient.ts"
import { BatchEndedUnfinished } from "../CliErrors.ts"
import { JsonOutput } from "../CliSettings.ts"
import { BATCH_STATUSES } from "../../domain/batch/BatchStatus.ts"
import { printAnswer, printJson } from "../Output.ts"
import { nonBlankFlag, pageFlags } from "../Params.ts"
import { batchEnded, batchListView, batchProgress, batchSummaryLine, batchView } from "./BatchesView.ts"
import { progressDisplay } from "./VideosProgress.ts"

const idArgument = Argument.String("id").pipe(Argument.withDescription("The batch id (batch_… or msgbatch_…)"))

const list = Command.make(
  "list",
  {
    account: nonBlankFlag("account").pipe(
      Flag.withMetavar("accountId"),
      Flag.withDescription("Only this account's batches"),
      Flag.optional
    ),
    status: Flag.Literals("status", BATCH_STATUSES).pipe(
      Flag.withDescription("Only batches in this status"),
      Flag.optional
    ),
    ...pageFlags("Batches", "batch id")
  },
  Effect.fn("batches.list")(function* ({ account, status, limit, after }) {
    const answer = yield* (yield* AdminClient).listBatches({
      accountId: Option.getOrUndefined(account),
      status: Option.getOrUndefined(status),
      limit: Option.getOrUndefined(limit),
      after: Option.getOrUndefined(after)
    })
    yield* printAnswer(answer, batchListView)
  })
).pipe(
  Command.withDescription("List every account's batches, newest first (GET /admin/batches)"),
  Command.withAlias("ls"),
  Command.provide(AdminClient.layer)
)

const show = Command.make(
  "show",
  { id: idArgument },
  Effect.fn("batches.show")(function* ({ id }) {
    yield* printAnswer(yield* (yield* AdminClient).showBatch(id), batchView)
  })
).pipe(
  Command.withDescription(
    "Show a batch: status, line counts, money held, charged and refunded (GET /admin/batches/{id})"
  ),
  Command.provide(AdminClient.layer)
)

const cancel = Command.make(
  "cancel",
  { id: idArgument },
  Effect.fn("batches.cancel")(function* ({ id }) {
    yield* printAnswer(yield* (yield* AdminClient).cancelBatch(id), batchView)
  })
).pipe(
  Command.withDescription(
    "Cancel a batch as its holder would: lines running finish, the rest never run (POST /admin/batches/{id}/cancel)"
  ),
  Command.provide(AdminClient.layer)
)

// A dropped connection while following should not end the tail.
const pollRetry = Schedule.exponential(Duration.millis(500))

const tail = Command.make(
  "tail",
  {
    id: idArgument,
    pollInterval: Flag.Int("poll-interval").pipe(
      Flag.withMetavar("ms"),
      Flag.withDescription("Milliseconds between polls (default 1000)"),
      Flag.filter(
        (ms) => ms >= 100,
        () => "at least 100 milliseconds"
      ),
      Flag.withDefault(1000)
    )
  },
  Effect.fn("batches.tail")(function* ({ id, pollInterval }) {
    const admin = yield* AdminClient
    const poll = admin
      .showBatch(id)
      .pipe(Effect.retry({ schedule: pollRetry, times: 4, while: (error) => error._tag === "ServerUnreachable" }))
    const final = yield* Effect.scoped(
      Effect.gen(function* () {
        const display = yield* progressDisplay(id)
        let answer = yield* poll
        for (;;) {
          const { label, percent } = batchProgress(answer.value)
          yield* display.update(label, percent)
          if (batchEnded(answer.value)) return answer
          yield* Effect.sleep(Duration.millis(pollInterval))
          answer = yield* poll
        }
      })
    )
    const batch = final.value
    if (yield* JsonOutput) yield* printJson(final.body)
    else yield* Console.log(batchSummaryLine(batch))
    if (batch.status === "failed" || batch.status === "expired") {
      return yield* new BatchEndedUnfinished({ id, status: batch.status, reason: batch.error ?? null })
    }
  })
).pipe(
  Command.withDescription(
    "Follow a batch with a progress bar until it ends, then print its counts and money (exit 1 if it failed or expired)"
  ),
  Command.provide(AdminClient.layer)
)

export const batches = Command.make("batches").pipe(
  Command.withDescription("List, show, cancel and follow batches of every account (the admin API's /admin/batches)"),
  Command.withSubcommands([list, show, cancel, tail])
)
