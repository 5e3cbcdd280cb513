/**
 * The `tollgate` command tree and how a run ends: exit 0 on success, 1 when the server or the admin token is the
 * problem (or replay finds mismatches), 2 for a command line that does not parse. Nothing here exits the process.
 */
import { Cause, Console, Effect, Layer } from "effect"
import { CliConfig, CliError, CliOutput, Command, GlobalFlag } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import packageJson from "../../package.json" with { type: "json" }
import type { CliFailure } from "./CliErrors.ts"
import { JsonOutput, ServerUrl } from "./CliSettings.ts"
import { accounts } from "./commands/accounts.ts"
import { audit } from "./commands/audit.ts"
import { batches } from "./commands/Batches.ts"
import { deposit } from "./commands/deposit.ts"
import { keys } from "./commands/keys.ts"
import { ledger } from "./commands/ledger.ts"
import { replay } from "./commands/replay.ts"
import { statement } from "./commands/statement.ts"
import { videos } from "./commands/Videos.ts"
import type { VideosFailure } from "./commands/VideosClient.ts"

export const tollgate = Command.make("tollgate").pipe(
  Command.withDescription(
    "Administer a Tollgate gateway through its admin API. The admin token comes from TOLLGATE_ADMIN_TOKEN, " +
      "else <data dir>/admin-token (TOLLGATE_DATA_DIR, default ./data). `tollgate videos` uses an API key from " +
      "TOLLGATE_API_KEY instead."
  ),
  Command.withSubcommands([accounts, audit, batches, deposit, keys, ledger, replay, statement, videos]),
  Command.withGlobalFlags([ServerUrl, JsonOutput])
)

export const exitCodes = { ok: 0, failure: 1, usage: 2, interrupted: 130 } as const

// Parse errors go to stderr with a pointer to the help, instead of the full help on stdout.
const presenter: CliOutput.Presenter = {
  present: (event) =>
    Effect.gen(function* () {
      const formatter = yield* CliOutput.Formatter
      switch (event._tag) {
        case "Help":
          return yield* event.reason === "Requested"
            ? Console.log(formatter.formatHelpDoc(event.helpDoc))
            : Console.error(formatter.formatHelpDoc(event.helpDoc))
        case "Version":
          return yield* Console.log(formatter.formatVersion(event.name, event.version))
        case "InvalidInvocation":
          yield* Console.error(formatter.formatErrors(event.errors))
          return yield* Console.error(`Run "${event.commandPath.join(" ")} --help" for usage.`)
      }
    })
}

export const cliLayer = Layer.mergeAll(
  CliConfig.layer({ builtIns: [GlobalFlag.Help, GlobalFlag.Version, GlobalFlag.Completions] }),
  CliOutput.layerPresenter(presenter),
  FetchHttpClient.layer
)

/** Runs one command line and answers the exit code; every failure has been printed on stderr by then. */
export const runTollgate = (argv: ReadonlyArray<string>) =>
  Command.runWith(tollgate, { version: packageJson.version })(argv).pipe(
    Effect.as(exitCodes.ok as number),
    Effect.catch((error: CliFailure | VideosFailure | CliError.CliError) =>
      CliError.isCliError(error)
        ? Effect.succeed(exitCodes.usage)
        : Effect.as(Console.error(`error: ${error.message}`), exitCodes.failure)
    ),
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.succeed(exitCodes.interrupted)
        : Effect.as(
            Console.error(`error: unexpected failure (a bug in tollgate)\n${Cause.pretty(cause)}`),
            exitCodes.failure
          )
    ),
    Effect.provide(cliLayer)
  )
