/**
 * `tollgate replay --verify | --apply`: POST /admin/replay (`?mode=apply`) with `Accept: application/x-ndjson`, so the
 * server reports each page of events as it folds them: a progress bar of events folded out of the snapshot's total on
 * a terminal (one line per change elsewhere), then the per-table summary. No request timeout: a long history takes
 * minutes, and the bar shows it moving.
 */
import { Console, Effect, Schema, Stream } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { adminResponse } from "../AdminRequest.ts"
import { ReplayMismatch, ServerUnreachable, UnexpectedResponse } from "../CliErrors.ts"
import { JsonOutput, ServerUrl } from "../CliSettings.ts"
import { printJson } from "../Output.ts"
import { type ReplaySummary, replaySummaryView } from "../Views.ts"
import { progressDisplay } from "./VideosProgress.ts"

const Counts = Schema.Record(Schema.String, Schema.Number)

export const ReplaySummarySchema = Schema.Struct({
  ok: Schema.Boolean,
  events: Schema.optional(Schema.Number),
  accounts: Schema.optional(Schema.Number),
  mismatches: Schema.optional(Schema.Array(Schema.Unknown)),
  durationMs: Schema.optional(Schema.Number),
  eventsPerSecond: Schema.optional(Schema.Number),
  tables: Schema.optional(Counts),
  repaired: Schema.optional(
    Schema.Record(Schema.String, Schema.Struct({ written: Schema.Number, deleted: Schema.Number }))
  ),
  caughtUp: Schema.optional(Schema.Number),
  pauseMs: Schema.optional(Schema.Number)
})

/** One line of the server's NDJSON answer. */
const ReplayLine = Schema.Union([
  Schema.Struct({ progress: Schema.Struct({ events: Schema.Number, total: Schema.Number }) }),
  Schema.Struct({ report: Schema.Unknown }),
  Schema.Struct({ error: Schema.Struct({ message: Schema.String }) })
])
const decodeLine = Schema.decodeUnknownResult(Schema.fromJsonString(ReplayLine))
const decodeReport = Schema.decodeUnknownResult(ReplaySummarySchema)

const count = (n: number) => n.toLocaleString("en-US")

const callReplay = (mode: "verify" | "apply") =>
  Effect.scoped(
    Effect.gen(function* () {
      const url = yield* ServerUrl
      const response = yield* adminResponse("/admin/replay", {
        method: "POST",
        accept: "application/x-ndjson",
        timeout: undefined,
        ...(mode === "apply" ? { urlParams: { mode } } : {})
      })
      const display = yield* progressDisplay(mode === "apply" ? "rebuilding" : "replaying")
      let report: unknown
      yield* response.stream.pipe(
        Stream.mapError(
          (error) => new ServerUnreachable({ url, reason: `the answer was cut off (${error.reason._tag})` })
        ),
        Stream.decodeText,
        Stream.splitLines,
        Stream.filter((text) => text.trim() !== ""),
        Stream.runForEach((text) =>
          Effect.gen(function* () {
            const decoded = decodeLine(text)
            if (decoded._tag === "Failure") {
              return yield* new UnexpectedResponse({ url, status: response.status, detail: text.slice(0, 120) })
            }
            const value = decoded.success
            if ("progress" in value) {
              const { events, total } = value.progress
              yield* display.update(
                `${count(events)} / ${count(total)} events`,
                total === 0 ? 100 : (events * 100) / total
              )
            } else if ("report" in value) {
              report = value.report
            } else {
              return yield* new ServerUnreachable({ url, reason: `the replay failed: ${value.error.message}` })
            }
          })
        )
      )
      const decoded = decodeReport(report)
      if (decoded._tag === "Failure") {
        return yield* new UnexpectedResponse({
          url,
          status: response.status,
          detail: "the answer has no replay report"
        })
      }
      return { body: report, value: decoded.success as ReplaySummary }
    })
  )

export const replay = Command.make(
  "replay",
  {
    verify: Flag.Boolean("verify").pipe(
      Flag.withDescription("Replay every event and compare the result with the live projections"),
      Flag.withDefault(false)
    ),
    apply: Flag.Boolean("apply").pipe(
      Flag.withDescription(
        "Rebuild every projection from the events and replace the live rows (writers pause briefly at the end)"
      ),
      Flag.withDefault(false)
    )
  },
  Effect.fn("replay")(function* ({ verify, apply }) {
    // A mode is always named, so a bare `tollgate replay` can never rewrite anything.
    if (verify === apply) {
      yield* Console.error(
        verify ? "Choose one of --verify and --apply." : "Missing required flag: --verify (or --apply)"
      )
      yield* Console.error('Run "tollgate replay --help" for usage.')
      return yield* new CliError.MissingOption({ option: "verify" })
    }
    const mode = apply ? "apply" : "verify"
    const answer = yield* callReplay(mode)
    if (yield* JsonOutput) yield* printJson(answer.body)
    else yield* Console.log(replaySummaryView(answer.value, mode))
    if (mode === "verify" && !answer.value.ok) {
      if (yield* JsonOutput) yield* Console.error(replaySummaryView(answer.value, mode))
      return yield* new ReplayMismatch({ mismatches: answer.value.mismatches?.length ?? 0 })
    }
  })
).pipe(
  Command.withDescription(
    "Check that replaying all events reproduces the projections, or rebuild them in place (POST /admin/replay)"
  ),
  Command.withExamples([
    { command: "tollgate replay --verify", description: "Exit 1 and list mismatches if any" },
    { command: "tollgate replay --apply", description: "Rebuild every projection in place from the events" }
  ])
)
