/**
 * Flags every `tollgate` command accepts, anywhere on the line (`tollgate --json accounts list` and
 * `tollgate accounts list --json` are the same).
 */
import { Config, Option } from "effect"
import { Flag, GlobalFlag } from "effect/cli"

export const defaultServerUrl = "http://127.0.0.1:8080"

/** An http(s) base URL without a trailing slash, so paths can be appended as they are. */
export const parseServerUrl = (input: string): Option.Option<string> =>
  /^https?:\/\/[^\s/?#]+(?:\/[^\s?#]*)?$/i.test(input) && URL.canParse(input)
    ? Option.some(input.replace(/\/+$/, ""))
    : Option.none()

export const ServerUrl = GlobalFlag.Setting("url")({
  flag: Flag.String("url").pipe(
    Flag.withDescription(`Base URL of the Tollgate server (env TOLLGATE_URL, default ${defaultServerUrl})`),
    Flag.withFallbackConfig(Config.String("TOLLGATE_URL")),
    Flag.withDefault(defaultServerUrl),
    Flag.filterMap(parseServerUrl, () => `an http(s) URL like ${defaultServerUrl}`)
  )
})

export const JsonOutput = GlobalFlag.Setting("json")({
  flag: Flag.Boolean("json").pipe(
    Flag.withDescription("Print the server's JSON answer instead of a table"),
    Flag.withDefault(false)
  )
})
