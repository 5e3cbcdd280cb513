/**
 * Where a request's access line goes (`Route.respond` writes one per request, once its response is over). By default
 * it is logged through Effect's logger: `Effect.logInfo("request")` with the fields as annotations. `npm start`
 * (`Launch.ts`) writes the same line as text straight into its batched JSON output instead (`direct`): logging it
 * through Effect copies the request's context to annotate it and builds an entry object to format, which measured
 * 25–30 µs of a request's CPU, about 5 % (bench/README.md, "One pull for a streamed reply"); the text costs a
 * `JSON.stringify`. The line is the same text either way (`test/http/AccessLog.test.ts`).
 */
import { Clock, Context, Effect, LogLevel, References } from "effect"
import { type PlainFields, plainLine } from "../adapters/telemetry/JsonLogger.ts"

export interface AccessLogWriter {
  readonly write: (fields: PlainFields) => Effect.Effect<void>
}

const MESSAGE = "request"
const LEVEL: LogLevel.LogLevel = "Info"

/** Through Effect's logger: whatever loggers the program has. */
export const viaLogger: AccessLogWriter = {
  write: (fields) => Effect.logInfo(MESSAGE).pipe(Effect.annotateLogs(fields))
}

export const AccessLog = Context.Reference<AccessLogWriter>("tollgate/http/AccessLog", {
  defaultValue: () => viaLogger
})

const isEmpty = (record: Readonly<Record<string, unknown>>) => {
  for (const _ in record) return false
  return true
}

/**
 * Appends the access line as text (`append`: the batched JSON output's). It honours the minimum log level as Effect's
 * logger does; a line that would carry more than its fields (annotations or log spans around the request) goes
 * through the logger instead, so that it is still the same text.
 */
export const direct = (append: (line: string) => void): AccessLogWriter => ({
  write: (fields) =>
    Effect.withFiber((fiber) => {
      if (LogLevel.isGreaterThan(fiber.getRef(References.MinimumLogLevel), LEVEL)) return Effect.void
      if (
        !isEmpty(fiber.getRef(References.CurrentLogAnnotations)) ||
        fiber.getRef(References.CurrentLogSpans).length > 0
      )
        return viaLogger.write(fields)
      const date = new Date(fiber.getRef(Clock.Clock).currentTimeMillisUnsafe())
      append(plainLine(MESSAGE, LEVEL, date, fields, fiber.id))
      return Effect.void
    })
})
