/**
 * Composition root: reads the configuration, opens the store, and serves (`main.ts` launches it). With nothing set:
 * 127.0.0.1:8080 on an embedded PGlite database under ./data, with a first-start banner that shows the admin token and
 * a demo key once. `LaunchOverrides` exist for the benchmarks (bench/ladder) and are never read from the environment.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Logger, Option, Redacted } from "effect"
import { resolve } from "node:path"
import { type AppOptions, DEFAULT_SHUTDOWN_GRACE_SECONDS, serverLayer, servicesLayer } from "./AppLayer.ts"
import { adminTokenPath, ensureDemoAccount, loadOrCreateAdminToken, saveFirstStartSecrets } from "./app/FirstStart.ts"
import { parseTrustProxy } from "./http/AuthThrottle.ts"
import { makeBatchedJsonLogger } from "./adapters/telemetry/JsonLogger.ts"
import * as IdleCollection from "./adapters/runtime/IdleCollection.ts"
import { createHere, createInChild, folderToCreate } from "./adapters/store/EmbeddedStoreCreation.ts"

const settings = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(8080)),
  host: Config.String("HOST").pipe(Config.withDefault("127.0.0.1")),
  databaseUrl: Config.option(Config.Redacted("DATABASE_URL")),
  dataDir: Config.String("TOLLGATE_DATA_DIR").pipe(Config.withDefault("./data")),
  adminToken: Config.option(Config.Redacted("TOLLGATE_ADMIN_TOKEN")),
  // Unset: /metrics is open (bind it to a private address or put it behind the proxy); set: Bearer required.
  metricsToken: Config.option(Config.Redacted("TOLLGATE_METRICS_TOKEN")),
  // Set: rate limits are shared by every instance through this Redis; unset: kept in this process.
  redisUrl: Config.option(Config.Redacted("REDIS_URL")),
  // Set: traces go to this OTLP/HTTP collector (`<endpoint>/v1/traces`), the standard OpenTelemetry variable.
  otlpEndpoint: Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT")),
  maxBodyBytes: Config.Int("TOLLGATE_MAX_BODY_BYTES").pipe(Config.withDefault(32 * 1024 * 1024)),
  // Transcription uploads past this get a 413 before anything is held (OpenAI's own limit: 25 MiB).
  maxAudioBytes: Config.Int("TOLLGATE_MAX_AUDIO_BYTES").pipe(Config.withDefault(25 * 1024 * 1024)),
  configPath: Config.option(Config.String("TOLLGATE_CONFIG")),
  // Generated videos are kept here until they expire (default: <data dir>/content).
  contentDir: Config.option(Config.String("TOLLGATE_CONTENT_DIR")),
  // Hosts or CIDRs the guarded fetcher may reach although they are private (internal deployments, tests).
  fetchAllowHosts: Config.String("TOLLGATE_FETCH_ALLOW_HOSTS").pipe(Config.withDefault("")),
  // Off by default: x-forwarded-for names the client only when it comes from a proxy the operator trusts.
  trustProxy: Config.String("TOLLGATE_TRUST_PROXY").pipe(Config.withDefault("")),
  // On SIGTERM/SIGINT: how long requests in flight (streams included) have to finish before they are cut.
  shutdownGraceSeconds: Config.Number("TOLLGATE_SHUTDOWN_GRACE_SECONDS").pipe(
    Config.withDefault(DEFAULT_SHUTDOWN_GRACE_SECONDS)
  )
})

/**
 * The banner may carry secrets (a new admin token, the demo key), so it never passes through the logger. On a
 * terminal it is shown there. Without one — stdout captured by docker, systemd or a log shipper — the secrets go only
 * to a file beside the admin token, and the log says where, without them.
 */
const showBanner = (dataDir: string, listening: string, secrets: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    // Edge: whether a person is reading this process's output (Node's TTY flag on stdout).
    if (process.stdout.isTTY === true) {
      return yield* Effect.sync(() => process.stdout.write(`\n${[listening, ...secrets].join("\n")}\n\n`))
    }
    yield* Effect.logInfo(listening)
    if (secrets.length === 0) return
    const path = yield* saveFirstStartSecrets(dataDir, secrets)
    yield* Effect.logInfo(
      `first start: no terminal to show the admin token and the demo key on; they were written to ${path} (mode 0600)`
    )
  })

/** What a benchmark may swap in the composition (bench/ladder/MemoryLedgerGateway.ts); `npm start` sets nothing. */
export interface LaunchOverrides {
  readonly ledgerWriter?: AppOptions["ledgerWriter"]
}

const program = (overrides: LaunchOverrides) =>
  Effect.gen(function* () {
    const config = yield* settings
    const dataDir = resolve(config.dataDir)
    const embedded = Option.isNone(config.databaseUrl)
    let adminToken: Redacted.Redacted<string>
    let tokenCreated = false
    if (Option.isSome(config.adminToken)) {
      adminToken = config.adminToken.value
    } else if (embedded) {
      const stored = yield* loadOrCreateAdminToken(dataDir)
      adminToken = Redacted.make(stored.token)
      tokenCreated = stored.created
    } else {
      return yield* Effect.fail(
        new Error("TOLLGATE_ADMIN_TOKEN is required when DATABASE_URL is set (the admin API must have a token)")
      )
    }
    if (!(config.shutdownGraceSeconds >= 0 && config.shutdownGraceSeconds <= 3600)) {
      return yield* Effect.fail(
        new Error("TOLLGATE_SHUTDOWN_GRACE_SECONDS: expected a number of seconds from 0 to 3600")
      )
    }
    const trustProxy = parseTrustProxy(config.trustProxy)
    if (trustProxy === undefined) {
      return yield* Effect.fail(
        new Error("TOLLGATE_TRUST_PROXY: expected true, false, or a comma-separated list of proxy addresses or CIDRs")
      )
    }
    const pgliteDir = `${dataDir}/pglite`
    // A first start makes its database in a child process, and opens it here as a later start would.
    if (embedded) yield* createInChild(pgliteDir)
    const services = servicesLayer({
      database: Option.isSome(config.databaseUrl)
        ? { kind: "postgres", url: config.databaseUrl.value }
        : { kind: "pglite", dataDir: pgliteDir },
      adminToken,
      maxBodyBytes: config.maxBodyBytes,
      maxAudioBytes: config.maxAudioBytes,
      metricsToken: Option.getOrUndefined(config.metricsToken),
      redisUrl: Option.getOrUndefined(config.redisUrl),
      configPath: Option.getOrUndefined(config.configPath),
      contentDir: resolve(Option.getOrElse(config.contentDir, () => `${dataDir}/content`)),
      journalDir: dataDir,
      imageFetch: {
        allowHosts: config.fetchAllowHosts
          .split(",")
          .map((host) => host.trim())
          .filter((host) => host.length > 0)
      },
      authThrottle: { trustProxy },
      ledgerWriter: overrides.ledgerWriter
    })
    const firstStart = Layer.effectDiscard(
      Effect.gen(function* () {
        const demo = embedded ? yield* ensureDemoAccount : undefined
        const url = `http://${config.host}:${config.port}`
        const listening = `Tollgate is listening on ${url} (${embedded ? `embedded store in ${dataDir}` : "Postgres"})`
        const secrets: Array<string> = []
        if (tokenCreated) {
          secrets.push(
            `Admin token (shown once; also saved in ${adminTokenPath(dataDir)}, mode 0600):`,
            `  ${Redacted.value(adminToken)}`
          )
        }
        if (demo !== undefined) {
          secrets.push(
            "Demo account with 10.00 and its API key (shown once, keep it):",
            `  account ${demo.accountId}`,
            `  ${demo.key}`,
            `Try: curl -s ${url}/v1/models -H "Authorization: Bearer ${demo.key}"`
          )
        }
        yield* showBanner(dataDir, listening, secrets)
      })
    ).pipe(Layer.provide(services))
    const tracing = Option.match(config.otlpEndpoint, {
      onNone: () => undefined,
      onSome: (endpoint) => ({ endpoint })
    })
    const app = Layer.mergeAll(
      serverLayer(
        services,
        { port: config.port, host: config.host, shutdownGraceSeconds: config.shutdownGraceSeconds },
        tracing
      ),
      firstStart,
      // The process's heap, given back once it goes quiet after work (a process-wide matter: here, not in the server).
      IdleCollection.layer()
    )
    return yield* Layer.launch(app)
  })

/** Log lines are JSON, batched to stdout (adapters/telemetry/JsonLogger.ts). */
const batchedJsonLogger = makeBatchedJsonLogger((text) => process.stdout.write(text))

/** The gateway; or, started as `<entry> --create-embedded-store <folder>`, the child that makes a first start's database. */
export const launch = (overrides: LaunchOverrides = {}) => {
  const folder = folderToCreate(process.argv)
  const main =
    folder === undefined
      ? Effect.tapCause(program(overrides), (cause) => Effect.logError("Tollgate failed to start", cause))
      : Effect.tapCause(createHere(folder), (cause) =>
          Effect.logError("the embedded database could not be made in a child process", cause)
        )
  return main.pipe(Effect.provide(Logger.layer([batchedJsonLogger])), NodeRuntime.runMain)
}
