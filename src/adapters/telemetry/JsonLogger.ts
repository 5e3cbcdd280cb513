/**
 * Log lines as JSON, written in batches: one write every `windowMs` (20 ms) at most instead of one synchronous write
 * per line (every request writes an access line). The timer is set by the first line of a batch, so an idle process
 * never wakes for its logger (Effect's `Logger.batched` sleeps and wakes every window, 50 times a second, lines or
 * not). What is buffered is written when the logger's scope closes (the process shuts down); a crash can lose the
 * last window of lines. `timers` is Node's unless a test counts them.
 */
import { Effect, Logger } from "effect"

export interface Timers {
  readonly set: (run: () => void, ms: number) => unknown
  readonly clear: (timer: unknown) => void
}

const nodeTimers: Timers = {
  set: (run, ms) => setTimeout(run, ms),
  clear: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>)
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
      lines.push(Logger.formatJson.log(options))
      if (timer === undefined) timer = timers.set(flush, windowMs)
    })
  })
