/**
 * Runs the CLI in-process with a given environment and collects what it prints, for tests and embedding. The
 * environment replaces `process.env` for the run (it is the only source of TOLLGATE_* settings).
 */
import * as NodeServices from "@effect/platform-node/NodeServices"
import { ConfigProvider, Console, Effect, Layer } from "effect"
import { CliOutput } from "effect/cli"
import { runTollgate } from "./Tollgate.ts"

export interface CliResult {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

const render = (args: ReadonlyArray<unknown>) =>
  `${args.map((arg) => (typeof arg === "string" ? arg : JSON.stringify(arg))).join(" ")}\n`

export const runCli = (argv: ReadonlyArray<string>, env: Record<string, string> = {}): Effect.Effect<CliResult> =>
  Effect.suspend(() => {
    const stdout: Array<string> = []
    const stderr: Array<string> = []
    const console: Console.Console = Object.assign(Object.create(globalThis.console), {
      log: (...args: ReadonlyArray<unknown>) => stdout.push(render(args)),
      info: (...args: ReadonlyArray<unknown>) => stdout.push(render(args)),
      error: (...args: ReadonlyArray<unknown>) => stderr.push(render(args)),
      warn: (...args: ReadonlyArray<unknown>) => stderr.push(render(args))
    })
    return runTollgate(argv).pipe(
      Effect.provide(
        Layer.mergeAll(
          NodeServices.layer,
          CliOutput.layer(CliOutput.defaultFormatter({ colors: false })),
          ConfigProvider.layer(ConfigProvider.fromEnv({ env }))
        )
      ),
      Effect.provideService(Console.Console, console),
      Effect.map((exitCode) => ({ exitCode, stdout: stdout.join(""), stderr: stderr.join("") }))
    )
  })
