/**
 * Log lines as JSON, written in batches: one write every `windowMs` (20 ms) at most instead of one synchronous write
 * per line (every request writes an access line). The timer is set by the first line of a batch, so an idle process
 * never wakes for its logger (Effect's `Logger.batched` sleeps and wakes every window, 50 times a second, lines or
 * not). What is buffered is written when the logger's scope closes (the process shuts down); a crash can lose the
 * last window of lines. `timers` is Node's unless a test counts them.
 *
 * A line is Effect's structured log entry (`Logger.formatStructured`) as JSON. Effect's `Formatter.formatJson`
 * stringifies through a replacer (cycles, redaction, bigints, errors), which takes `JSON.stringify` off its fast path;
 * an entry whose values are all plain text, numbers, booleans and nulls — every access line — needs none of that and
 * is stringified directly, to the same text.
 */
import { Effect, Formatter, Logger } from "effect"

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

export const makeBatchedJsonLogger = (write: (text: string) => void, windowMs = 20, timers: Timers = nodeTimers) =>
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
    return Logger.make((options) => {
      lines.push(jsonLine(options))
      if (timer === undefined) timer = timers.set(flush, windowMs)
    })
  })
