/**
 * The live progress of a video task on stderr while `tollgate videos create --wait` polls it: a `cli-progress` bar
 * on a terminal, and on anything else (a pipe, a CI log) one plain line per change, since redrawing a line only
 * works on a terminal and a line every tick would flood a log.
 */
import cliProgress from "cli-progress"
import { Context, Effect, type Scope } from "effect"

/** What the display writes to: `process.stderr`, or a fake in tests. */
export interface ProgressStream {
  readonly write: (chunk: string) => unknown
  readonly isTTY?: boolean | undefined
  readonly columns?: number | undefined
}

export const ProgressOutput = Context.Reference<ProgressStream>("tollgate/cli/ProgressOutput", {
  defaultValue: () => process.stderr
})

export interface ProgressDisplay {
  readonly update: (status: string, progress: number) => Effect.Effect<void>
}

const percent = (progress: number) => (Number.isFinite(progress) ? Math.min(100, Math.max(0, Math.round(progress))) : 0)

/** The non-terminal form: `video_123  in_progress  40%`. */
export const progressLine = (id: string, status: string, progress: number): string =>
  `${id}  ${status}  ${percent(progress)}%`

const barFormat = "{id} [{bar}] {percentage}% | {status} | {duration_formatted}"

const terminalDisplay = (stream: ProgressStream, id: string) =>
  Effect.acquireRelease(
    // Edge: cli-progress is an imperative library with its own redraw timer; `stop` below ends it.
    Effect.sync(() => {
      const bar = new cliProgress.SingleBar(
        {
          stream: stream as NodeJS.WritableStream,
          format: barFormat,
          barCompleteChar: "█",
          barIncompleteChar: "░",
          hideCursor: true,
          barsize: 30
        },
        cliProgress.Presets.shades_classic
      )
      bar.start(100, 0, { id, status: "queued" })
      return bar
    }),
    (bar) => Effect.sync(() => bar.stop())
  ).pipe(
    Effect.map(
      (bar): ProgressDisplay => ({
        update: (status, progress) => Effect.sync(() => bar.update(percent(progress), { status }))
      })
    )
  )

const lineDisplay = (stream: ProgressStream, id: string): ProgressDisplay => {
  let last: string | undefined
  return {
    update: (status, progress) =>
      Effect.sync(() => {
        const line = progressLine(id, status, progress)
        if (line === last) return
        last = line
        stream.write(`${line}\n`)
      })
  }
}

/** A display for task `id` on `ProgressOutput`, closed (the bar's line finished) when the scope ends. */
export const progressDisplay = (id: string): Effect.Effect<ProgressDisplay, never, Scope.Scope> =>
  Effect.gen(function* () {
    const stream = yield* ProgressOutput
    return stream.isTTY === true ? yield* terminalDisplay(stream, id) : lineDisplay(stream, id)
  })
