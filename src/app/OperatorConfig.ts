/**
 * The operator's config file (YAML, or JSON when the name ends in `.json`; path in `TOLLGATE_CONFIG`): upstreams,
 * models with their prices, plugins, ledger and video settings. It is validated once at start and every problem is
 * reported as `path: message`; API keys come from `${VAR}` references and are kept `Redacted`.
 */
import { Config, Context, Effect, FileSystem, Layer, Option, Path, Result, Schema } from "effect"

import { decodeOperatorConfig } from "./config/decodeOperatorConfig.ts"
import { referencedVariables } from "./config/expandEnv.ts"
import { type PluginPriceKeys, pricingIssues } from "./config/ModelPricing.ts"
import type { OperatorConfigData } from "./config/OperatorConfigData.ts"
import { traced } from "./Traced.ts"

export { OperatorConfigDefaults } from "./config/decodeOperatorConfig.ts"
export { formatPrice, type ModelPricing, type PluginPriceKeys, parsePrice } from "./config/ModelPricing.ts"
export type { ModelConfig, OperatorConfigData, UpstreamConfig } from "./config/OperatorConfigData.ts"
export { type UpstreamProtocol, UpstreamProtocols } from "./config/UpstreamProtocol.ts"

export class OperatorConfigError extends Schema.TaggedError<OperatorConfigError>()("OperatorConfigError", {
  /** The file, or the variable that should have named it. */
  source: Schema.String,
  /** Every problem found, each `path: message`. */
  issues: Schema.Array(Schema.String)
}) {
  override get message(): string {
    return `invalid operator config ${this.source}:\n  ${this.issues.join("\n  ")}`
  }
}

export type ConfigFormat = "yaml" | "json"

const CONFIG_PATH_VARIABLE = "TOLLGATE_CONFIG"

/** `${VAR}` values for the names the file refers to, read through the current `ConfigProvider`. */
const readVariables = Effect.fnUntraced(function* (names: ReadonlySet<string>) {
  const env = new Map<string, string>()
  for (const name of names) {
    const value = yield* Config.option(Config.String(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    if (Option.isSome(value)) env.set(name, value.value)
  }
  return env
})

/**
 * The YAML parser, loaded with the first YAML text: a gateway on the built-in catalog never needs it (~80 ms of
 * start, bench/README.md "Start-up (sixth session)").
 */
let yamlModule: Promise<typeof import("yaml")> | undefined
const loadYaml = Effect.promise(() => {
  yamlModule ??= import("yaml")
  return yamlModule
})

// JSON.parse reports bad input by throwing; Result.try keeps the throw at this edge.
const parseJson = (text: string): Result.Result<unknown, ReadonlyArray<string>> =>
  Result.try({
    try: () => JSON.parse(text) as unknown,
    catch: (error) => [`config: invalid JSON${jsonPosition(text, error)}`]
  })

const parseYaml = (yaml: typeof import("yaml"), text: string): Result.Result<unknown, ReadonlyArray<string>> => {
  const document = yaml.parseDocument(text, { prettyErrors: true, uniqueKeys: true })
  if (document.errors.length > 0) {
    // The first line of a yaml error names the problem and its position; later lines quote the file, which may hold a key.
    return Result.fail(document.errors.map((error) => `config: invalid YAML: ${error.message.split("\n")[0]}`))
  }
  return Result.try({
    try: () => document.toJS({ maxAliasCount: 100 }) as unknown,
    catch: (error) => [`config: invalid YAML: ${error instanceof Error ? error.message.split("\n")[0] : "unreadable"}`]
  })
}

const jsonPosition = (text: string, error: unknown): string => {
  const position = error instanceof Error ? /position (\d+)/.exec(error.message) : null
  if (position === null) return ""
  const before = text.slice(0, Number(position[1])).split("\n")
  return ` at line ${before.length}, column ${before[before.length - 1].length + 1}`
}

/**
 * Parses and validates config text; `${VAR}` references are read through the current `ConfigProvider`. Relative plugin
 * specifiers are resolved against `baseDir` when given.
 */
const parse = Effect.fnUntraced(function* (
  text: string,
  options: {
    readonly format: ConfigFormat
    readonly source?: string
    readonly baseDir?: string
    /** The built-in families' price keys, checked with the rest of the file (see `DecodeOptions.priceKeys`). */
    readonly priceKeys?: ReadonlyMap<string, PluginPriceKeys>
  }
): Effect.fn.Return<OperatorConfigData, OperatorConfigError, Path.Path> {
  const source = options.source ?? "(text)"
  const raw = options.format === "json" ? parseJson(text) : parseYaml(yield* loadYaml, text)
  if (Result.isFailure(raw)) return yield* new OperatorConfigError({ source, issues: raw.failure })
  const env = yield* readVariables(referencedVariables(raw.success))
  const path = yield* Path.Path
  const baseDir = options.baseDir ?? path.resolve(".")
  const decoded = decodeOperatorConfig(raw.success, {
    env,
    resolvePlugin: (specifier) => path.resolve(baseDir, specifier),
    priceKeys: options.priceKeys
  })
  if (Result.isFailure(decoded)) return yield* new OperatorConfigError({ source, issues: decoded.failure })
  return decoded.success
}, traced("OperatorConfig.parse"))

/** Reads, parses and validates the config file at `file`. */
const load = Effect.fnUntraced(function* (
  file: string,
  priceKeys?: ReadonlyMap<string, PluginPriceKeys>
): Effect.fn.Return<OperatorConfigData, OperatorConfigError, FileSystem.FileSystem | Path.Path> {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const text = yield* fs
    .readFileString(file)
    .pipe(
      Effect.mapError(
        (error) =>
          new OperatorConfigError({ source: file, issues: [`config: cannot read the file (${error.message})`] })
      )
    )
  return yield* parse(text, {
    format: file.toLowerCase().endsWith(".json") ? "json" : "yaml",
    source: file,
    baseDir: path.dirname(path.resolve(file)),
    ...(priceKeys === undefined ? {} : { priceKeys })
  })
}, traced("OperatorConfig.load"))

/**
 * Problems with models once plugins are loaded: a model must name a known plugin (built-in families are always known)
 * and price only by the keys that plugin bills by.
 */
const pluginIssues = (
  config: Pick<OperatorConfigData, "models">,
  plugins: ReadonlyMap<string, PluginPriceKeys>
): ReadonlyArray<string> => {
  const issues: Array<string> = []
  const known = [...plugins.keys()]
  config.models.forEach((model, index) => {
    const path = `models[${index}]`
    const keys = plugins.get(model.plugin)
    if (keys === undefined) issues.push(`${path}.plugin: no such plugin (known: ${known.join(", ")})`)
    else issues.push(...pricingIssues(`${path}.pricing`, model.plugin, Object.keys(model.pricing), keys))
  })
  return issues
}

/** {@link pluginIssues} as an Effect that fails with every issue. */
const validatePlugins = Effect.fnUntraced(function* (
  config: Pick<OperatorConfigData, "models">,
  plugins: ReadonlyMap<string, PluginPriceKeys>,
  source = "plugins"
) {
  const issues = pluginIssues(config, plugins)
  if (issues.length > 0) return yield* new OperatorConfigError({ source, issues })
}, traced("OperatorConfig.validatePlugins"))

/** The loaded operator config. */
export class OperatorConfig extends Context.Service<OperatorConfig, OperatorConfigData>()(
  "tollgate/app/OperatorConfig"
) {
  static readonly load = load
  static readonly parse = parse
  static readonly decode = decodeOperatorConfig
  static readonly pluginIssues = pluginIssues
  static readonly validatePlugins = validatePlugins

  /** Loads the file named by `TOLLGATE_CONFIG`. */
  static readonly layer: Layer.Layer<OperatorConfig, OperatorConfigError, FileSystem.FileSystem | Path.Path> =
    Layer.effect(
      OperatorConfig,
      Effect.gen(function* () {
        const file = yield* Config.String(CONFIG_PATH_VARIABLE).pipe(
          Effect.mapError(
            () =>
              new OperatorConfigError({
                source: CONFIG_PATH_VARIABLE,
                issues: [`${CONFIG_PATH_VARIABLE}: environment variable is not set`]
              })
          )
        )
        return yield* load(file)
      })
    )

  static readonly layerFromFile = (
    file: string,
    priceKeys?: ReadonlyMap<string, PluginPriceKeys>
  ): Layer.Layer<OperatorConfig, OperatorConfigError, FileSystem.FileSystem | Path.Path> =>
    Layer.effect(OperatorConfig, load(file, priceKeys))

  static readonly layerTest = (config: OperatorConfigData): Layer.Layer<OperatorConfig> =>
    Layer.succeed(OperatorConfig, config)
}
