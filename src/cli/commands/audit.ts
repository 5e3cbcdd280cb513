/**
 * `tollgate audit verify` (POST /admin/audit/verify): recomputes every stream's hash chain and the global chain
 * through every checkpoint. Exit 0 when the history is intact; exit 1 naming the first broken event otherwise.
 */
import { Console, Effect, Schema } from "effect"
import { Command } from "effect/cli"
import { adminJson } from "../AdminRequest.ts"
import { AuditBroken, UnexpectedResponse } from "../CliErrors.ts"
import { JsonOutput, ServerUrl } from "../CliSettings.ts"
import { printJson } from "../Output.ts"

const Position = Schema.Union([Schema.String, Schema.Number])

export const AuditReport = Schema.Struct({
  ok: Schema.Boolean,
  checked: Position,
  streams: Schema.optional(Position),
  firstBroken: Schema.NullOr(
    Schema.Struct({
      stream: Schema.String,
      position: Position,
      globalPosition: Position,
      reason: Schema.optional(Schema.String)
    })
  ),
  durationMs: Schema.optional(Schema.Number)
})
export type AuditReport = typeof AuditReport.Type

export const auditView = (report: AuditReport): string => {
  const scope = `${report.checked} events${report.streams === undefined ? "" : ` in ${report.streams} streams`}`
  const time = report.durationMs === undefined ? "" : ` (${(report.durationMs / 1000).toFixed(1)} s)`
  if (report.firstBroken === null) return `intact: ${scope} verified${time}`
  const broken = report.firstBroken
  return (
    `BROKEN: ${broken.reason ?? "hash_mismatch"} at ${broken.stream} position ${broken.position} ` +
    `(global position ${broken.globalPosition}); ${scope} checked${time}`
  )
}

const verify = Command.make(
  "verify",
  {},
  Effect.fn("audit.verify")(function* () {
    const { body } = yield* adminJson("/admin/audit/verify", { method: "POST", timeout: undefined })
    const decoded = Schema.decodeUnknownResult(AuditReport)(body)
    if (decoded._tag === "Failure") {
      return yield* new UnexpectedResponse({ url: yield* ServerUrl, status: 200, detail: "not an audit report" })
    }
    const report = decoded.success
    if (yield* JsonOutput) yield* printJson(body)
    else yield* Console.log(auditView(report))
    if (!report.ok) return yield* new AuditBroken({ summary: auditView(report) })
  })
).pipe(
  Command.withDescription(
    "Recompute every event's hash chain and the checkpoints of the global chain; exit 1 at the first broken event"
  )
)

export const audit = Command.make("audit").pipe(
  Command.withDescription("Tamper evidence of the event history (POST /admin/audit/verify)"),
  Command.withSubcommands([verify])
)
