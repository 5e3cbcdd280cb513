/**
 * Log lines as JSON, written in batches: one write every `windowMs` (20 ms) at most instead of one synchronous write
 * per line (every request writes an access line). The timer is set by the first line of a batch, so an idle process
 * never wakes for its logger (Effect's `Logger.batched` sleeps and wakes every window, 50 times a second, lines or
 * not). What is buffered is written when the logger's scope closes (the process shuts down); a crash can lose the
 * last window of lines. `timers` is Node's unless a test counts them.
 *
 * A line is Effect's structured log entry (`Logger.formatStructured`) as JSON. Effect's `Formatter.formatJson`
 * stringifies through a replacer (cycles, redaction, bigints, errors), which takes `JSON.stringify` off its fast path;
 * an entry whose values are all plain text, numbers, booleans and nulls needs none of that and is stringified
 * directly, to the same text.
 *
 * The access line (one per request) can also be appended as text (`JsonLines.append`, with `plainLine`), the same
 * line without Effect's log pipeline: `http/AccessLog.ts` says why.
 */
import { Effect, Formatter, Logger, type LogLevel } from "effect"

export interface Timers {
  readonly set: (run: () => void, ms: number) => unknown
  readonly clear: (timer: unknown) => void
}

const nodeTimers: Timers = {
  set: (run, ms) => setTimeout(run, ms),
  clear: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>)
}

type Structured = ReturnType<(typeof Logger.formatStructured)["log"]>

const isPlain = (value: unknown): boolean =>
  value === null || typeof value === "string" || typeof value === "boolean" || typeof value === "number"

/** Nothing in the entry that `Formatter.formatJson`'s replacer would change. */
const isFlat = (entry: Structured): boolean => {
  if (entry.cause !== undefined || !isPlain(entry.message)) return false
  for (const key in entry.annotations) if (!isPlain(entry.annotations[key])) return false
  return true
}

/** One log line: Effect's JSON of the structured entry, stringified directly when nothing in it needs the replacer. */
export const jsonLine = (options: Logger.Options<unknown>): string => {
  const entry = Logger.formatStructured.log(options)
  return isFlat(entry) ? JSON.stringify(entry) : Formatter.formatJson(entry)
}

/** Plain values: what an access line's fields are. */
export type PlainFields = Readonly<Record<string, string | number | boolean | null>>

/**
 * The line `jsonLine` writes for an entry whose message is `message` alone, with no cause, no log span, and `fields` as
 * its only annotations, logged at `level` and `date` by fiber `fiberId` — built as text, without the entry.
 */
export const plainLine = (
  message: string,
  level: LogLevel.LogLevel,
  date: Date,
  fields: PlainFields,
  fiberId: number
): string =>
  `{"message":${JSON.stringify(message)},"level":"${level.toUpperCase()}","timestamp":"${date.toISOString()}",` +
  `"annotations":${JSON.stringify(fields)},"spans":{},"fiberId":"#${fiberId}"}`

/** The batched output: Effect's logger over it, and `append` for a line already made. */
export interface JsonLines {
  readonly logger: Logger.Logger<unknown, void>
  readonly append: (line: string) => void
}

export const makeBatchedJsonLogger = (write: (text: string) => void, windowMs = 20, timers: Timers = nodeTimers) =>
  Effect.map(makeBatchedJsonLines(write, windowMs, timers), (lines) => lines.logger)

export const makeBatchedJsonLines = (write: (text: string) => void, windowMs = 20, timers: Timers = nodeTimers) =>
  Effect.gen(function* () {
    let lines: Array<string> = []
    let timer: unknown
    const flush = () => {
      timer = undefined
      if (lines.length === 0) return
      const batch = lines
      lines = []
      write(`${batch.join("\n")}\n`)
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        if (timer !== undefined) timers.clear(timer)
        flush()
      })
    )
    const append = (line: string) => {
      lines.push(line)
      if (timer === undefined) timer = timers.set(flush, windowMs)
    }
    return { logger: Logger.make((options) => append(jsonLine(options))), append } satisfies JsonLines
  })
