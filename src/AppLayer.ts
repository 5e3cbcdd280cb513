/**
 * The composition root's building blocks: which adapters back which services, and the HTTP server over them.
 * `Launch.ts` reads the configuration and launches; tests build the same graph on an ephemeral port.
 */
import { NodeHttpServer, NodeServices } from "@effect/platform-node"
import { Duration, Effect, Layer, Option, type Redacted, References } from "effect"
import { HttpRouter } from "effect/http"
import type { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import * as Database from "./adapters/store/Database.ts"
import * as PgAccounts from "./adapters/store/PgAccounts.ts"
import * as PgEventStore from "./adapters/store/PgEventStore.ts"
import * as PgKeys from "./adapters/store/PgKeys.ts"
import { StoreNotifications } from "./adapters/store/StoreNotifications.ts"
import * as PgReplay from "./adapters/store/PgReplay.ts"
import * as ProjectionVersions from "./adapters/store/ProjectionVersions.ts"
import * as PgStatements from "./adapters/store/PgStatements.ts"
import * as PgVideoTasks from "./adapters/store/PgVideoTasks.ts"
import * as PgBatches from "./adapters/store/PgBatches.ts"
import { Batches, type BatchWorkerOptions } from "./app/batch/Batches.ts"
import { BatchOperator } from "./app/batch/BatchOperator.ts"
import * as PgResponseStore from "./adapters/store/PgResponseStore.ts"
import * as PgBackgroundResponses from "./adapters/store/PgBackgroundResponses.ts"
import * as PgConversations from "./adapters/store/PgConversations.ts"
import {
  type BackgroundOptions,
  BackgroundResponses,
  defaultBackgroundOptions
} from "./app/responses/BackgroundWorker.ts"
import { Conversations } from "./app/responses/Conversations.ts"
import * as ConversationsApi from "./http/ConversationsApi.ts"
import { ResponsesGateway } from "./app/responses/ResponsesGateway.ts"
import * as ResponsesApi from "./http/ResponsesApi.ts"
import { UpstreamClient } from "./adapters/upstream/UpstreamClient.ts"
import { vendorBatchesLayer } from "./plugins/text/VendorBatchClient.ts"
import * as MediaProbeLive from "./adapters/media/MediaProbeLive.ts"
import * as TokenCounterLive from "./adapters/tokenizer/TokenCounterLive.ts"
import { ChatGateway } from "./app/ChatGateway.ts"
import { ImageGateway } from "./app/ImageGateway.ts"
import { EmbeddingsGateway } from "./app/EmbeddingsGateway.ts"
import { EndpointGateway } from "./app/EndpointGateway.ts"
import * as EndpointApi from "./http/EndpointApi.ts"
import { AudioGateway } from "./app/AudioGateway.ts"
import * as EmbeddingsApi from "./http/EmbeddingsApi.ts"
import * as AudioApi from "./http/AudioApi.ts"
import { defaultVideoWorkerOptions, VideoTasks, type VideoWorkerOptions } from "./app/VideoTasks.ts"
import * as FileContentStore from "./adapters/content/FileContentStore.ts"
import * as VideosApi from "./http/VideosApi.ts"
import * as FilesApi from "./http/FilesApi.ts"
import * as BatchesApi from "./http/BatchesApi.ts"
import * as MessageBatchesApi from "./http/MessageBatchesApi.ts"
import { defaultLedgerOptions, Ledger, type LedgerOptions } from "./app/Ledger.ts"
import type { LedgerWriter } from "./app/ports/LedgerWriter.ts"
import * as PgLedgerWriter from "./adapters/store/PgLedgerWriter.ts"
import { SettlementJournal } from "./app/SettlementJournal.ts"
import * as FileSettlementJournal from "./adapters/journal/FileSettlementJournal.ts"
import { OperatorConfig, type OperatorConfigError } from "./app/OperatorConfig.ts"
import type { SimulatorStartError } from "./adapters/simulator/Simulator.ts"
import * as AdminApi from "./http/admin/AdminApi.ts"
import * as StatementsApi from "./http/admin/StatementsApi.ts"
import * as AuditApi from "./http/admin/AuditApi.ts"
import * as ReplayApi from "./http/admin/ReplayApi.ts"
import * as ModelsApi from "./http/admin/ModelsApi.ts"
import * as AdminVideosApi from "./http/admin/AdminVideosApi.ts"
import * as UpstreamsApi from "./http/admin/UpstreamsApi.ts"
import * as AdminBatchesApi from "./http/admin/AdminBatchesApi.ts"
import * as AlertsApi from "./http/admin/AlertsApi.ts"
import * as ConsoleApp from "./http/ConsoleApp.ts"
import * as UsageApi from "./http/UsageApi.ts"
import * as PgUsage from "./adapters/store/PgUsage.ts"
import * as PgAudit from "./adapters/store/PgAudit.ts"
import * as PgOperationalStats from "./adapters/store/PgOperationalStats.ts"
import * as InProcessRateLimiter from "./adapters/ratelimit/InProcessRateLimiter.ts"
import * as RedisRateLimiter from "./adapters/ratelimit/RedisRateLimiter.ts"
import * as InProcessDeploymentStates from "./adapters/routing/InProcessDeploymentStates.ts"
import * as RedisDeploymentStates from "./adapters/routing/RedisDeploymentStates.ts"
import { Deployments } from "./app/routing/Deployments.ts"
import { Alerts } from "./app/alerts/Alerts.ts"
import * as AlertDelivery from "./app/alerts/AlertDelivery.ts"
import * as AlertingLedger from "./app/alerts/AlertingLedger.ts"
import * as PgAlertStore from "./adapters/store/PgAlertStore.ts"
import * as RateLimitTokens from "./app/RateLimitTokens.ts"
import * as Tracing from "./adapters/telemetry/Tracing.ts"
import { MetricsToken, PrometheusRegistry, scrape } from "./http/Metrics.ts"
import * as ChatApi from "./http/ChatApi.ts"
import * as ChatDialectsLive from "./http/dialects/ChatDialectsLive.ts"
import * as GeminiApi from "./http/GeminiApi.ts"
import * as ImagesApi from "./http/ImagesApi.ts"
import { ImageFetcherService } from "./plugins/chat-image/ImageInputs.ts"
import { type GuardedFetcherOptions, guardedFetcherLayer } from "./adapters/fetch/GuardedFetcher.ts"
import * as DefaultCatalog from "./adapters/simulator/DefaultCatalog.ts"
import * as PluginsLayer from "./PluginsLayer.ts"
import * as PublicApi from "./http/PublicApi.ts"
import { HttpSettings } from "./http/Route.ts"
import { unroutableLayer } from "./http/Unroutable.ts"
import { AuthThrottle, type AuthThrottleOptions, defaultAuthThrottleOptions } from "./http/AuthThrottle.ts"

export interface AppOptions {
  readonly database: Database.DatabaseOptions
  readonly adminToken: Redacted.Redacted<string>
  readonly maxBodyBytes: number
  readonly ledger?: Partial<LedgerOptions>
  /** Between checkpoints of the audit chain; undefined → 10 minutes (tests that move the clock by days park it). */
  readonly auditCheckpointMillis?: number | undefined
  /** The operator config file; undefined → the built-in simulator catalog. */
  readonly configPath?: string | undefined
  /**
   * The guarded fetcher of URLs the gateway did not choose (image links, video input links, video results);
   * `allowHosts` opens internal hosts (tests, internal deployments).
   */
  readonly imageFetch?: GuardedFetcherOptions | undefined
  /** Where generated videos are kept (a directory); undefined → a temporary directory (tests). */
  readonly contentDir: string
  /** Video worker knobs (tests turn the loop off and drive `pollDue`, or shorten the lease). */
  readonly video?: Partial<VideoWorkerOptions> | undefined
  /** Background responses' worker: claim polling, lease and renewal times (tests shorten them). */
  readonly responses?: Partial<BackgroundOptions> | undefined
  /** Batch worker knobs over the config's `batches:` (tests shorten poll and lease, or drive `runDue` themselves). */
  readonly batches?: Partial<BatchWorkerOptions> | undefined
  /** Failed-authentication throttling per client address (limits, and which proxies may name the client). */
  readonly authThrottle?: Partial<AuthThrottleOptions> | undefined
  /** Redis shared by every instance for rate limits; undefined → kept in this process. */
  readonly redisUrl?: Redacted.Redacted<string> | undefined
  /** `/metrics` asks for this bearer token when set; open otherwise. */
  readonly metricsToken?: Redacted.Redacted<string> | undefined
  /** Largest audio upload for transcription (413 past it); undefined → 25 MiB, OpenAI's own limit. */
  readonly maxAudioBytes?: number | undefined
  /** Where settlements the database did not take wait for their commit; undefined → memory (not across restarts). */
  readonly journalDir?: string | undefined
  /**
   * Wraps the ledger's writer on the store (benchmarks only: bench/ladder swaps in an in-memory one to measure what a
   * request costs around the store); undefined → the store's writer as it is.
   */
  readonly ledgerWriter?:
    | ((
        store: Layer.Layer<LedgerWriter, never, SqlClient.SqlClient>
      ) => Layer.Layer<LedgerWriter, never, SqlClient.SqlClient>)
    | undefined
}

const operatorConfigLayer = (
  configPath: string | undefined
): Layer.Layer<OperatorConfig, OperatorConfigError | SimulatorStartError> =>
  configPath === undefined
    ? DefaultCatalog.layer
    : OperatorConfig.layerFromFile(configPath, PluginsLayer.builtinPriceKeys).pipe(Layer.provide(NodeServices.layer))

/** Every service the HTTP layer needs, over the chosen store. */
export const servicesLayer = (options: AppOptions) => {
  const store = Database.layer(options.database)
  // Two writer shards on Postgres (PGlite is one session anyway). Each batch costs a round trip and a statement
  // whatever its size, so fewer writers make bigger batches and spend less CPU per request (here and in Postgres); a
  // second one keeps a slow batch from holding everybody up. Bench scenario 1 (64 accounts, 5 s runs): 1 shard 2,421
  // req/s, 370 µs CPU + 112 µs in Postgres per request, p99 94 ms; 2 shards 2,209–2,372, 388–419 + 132–134 µs, p99
  // 42–103 ms; 4 shards 2,118–2,258, 412–441 + 151–164 µs; 8 shards 1,970, 470 + 197 µs. One batch in flight per
  // shard still commits up to 256 commands per round trip, far above what one gateway process sends.
  const shards = options.database.kind === "postgres" ? defaultLedgerOptions.shards : 1
  const config = operatorConfigLayer(options.configPath)
  const journal =
    options.journalDir === undefined ? SettlementJournal.inMemory : FileSettlementJournal.layer(options.journalDir)
  const ledger = Layer.unwrap(
    Effect.map(OperatorConfig, (operator) => {
      const ledgerOptions = {
        ...defaultLedgerOptions,
        shards,
        holdTtlSeconds: operator.ledger.holdTtlSeconds,
        ...options.ledger
      }
      const writer = PgLedgerWriter.layer(ledgerOptions)
      return Ledger.layerWith(ledgerOptions).pipe(Layer.provide(options.ledgerWriter?.(writer) ?? writer))
    })
  ).pipe(Layer.provide(journal))
  // Several instances share rate limits through Redis; one instance keeps them in process.
  const rateLimiter = Layer.unwrap(
    Effect.map(OperatorConfig, (operator) =>
      options.redisUrl === undefined
        ? InProcessRateLimiter.layer(operator.rateLimits)
        : RedisRateLimiter.layer(options.redisUrl, operator.rateLimits)
    )
  ).pipe(Layer.provide(config))
  // Deployments' health: per instance, or shared through the same Redis as the rate limits.
  const deploymentStates =
    options.redisUrl === undefined ? InProcessDeploymentStates.layer : RedisDeploymentStates.layer(options.redisUrl)
  // One guarded fetcher for every URL the gateway did not choose: image links, video input links, video results,
  // alert webhooks.
  const guarded = guardedFetcherLayer(options.imageFetch ?? {})
  // Alerts: queued in the Postgres outbox where they are noticed, delivered by this instance's worker.
  const alerts = Alerts.layer.pipe(
    Layer.provideMerge(PgAlertStore.layer.pipe(Layer.provide(StoreNotifications.layer))),
    Layer.provide(config)
  )
  const alertDelivery = AlertDelivery.layerWith().pipe(Layer.provide(Layer.merge(alerts, guarded)))
  const deployments = Deployments.layer.pipe(
    Layer.provide(Layer.mergeAll(deploymentStates, rateLimiter, config, alerts))
  )
  const countedLedger = AlertingLedger.layer.pipe(
    Layer.provide(RateLimitTokens.layer.pipe(Layer.provide(Layer.merge(ledger, rateLimiter)))),
    Layer.provide(alerts)
  )
  const registry = PluginsLayer.layerFrom((id) =>
    options.configPath === undefined ? DefaultCatalog.SIMULATOR_OWNER : `tollgate:${id.split("-")[0]}`
  ).pipe(
    Layer.provideMerge(UpstreamClient.layer),
    Layer.provide(ImageFetcherService.layer),
    Layer.provideMerge(guarded)
  )
  const core = Layer.mergeAll(
    countedLedger,
    rateLimiter,
    deployments,
    alerts,
    alertDelivery,
    PgAccounts.layer,
    // Keys and alert endpoints are cached until another instance's change is heard (StoreNotifications).
    PgKeys.layer.pipe(Layer.provide(StoreNotifications.layer)),
    PgReplay.layer,
    // Rebuilds, once, any projection whose code version moved past the stored one (before the server serves).
    ProjectionVersions.layer(),
    PgStatements.layer,
    PgAudit.layerWith({ checkpointMillis: options.auditCheckpointMillis ?? PgAudit.CHECKPOINT_INTERVAL_MILLIS }),
    PgUsage.layer,
    PgOperationalStats.layer,
    PgEventStore.layer,
    Layer.succeed(HttpSettings, HttpSettings.of({ maxBodyBytes: options.maxBodyBytes })),
    Layer.succeed(AdminApi.AdminToken, options.adminToken),
    AudioApi.AudioSettings.layer(options.maxAudioBytes ?? AudioApi.DEFAULT_MAX_AUDIO_BYTES),
    AuthThrottle.layerWith({ ...defaultAuthThrottleOptions, ...options.authThrottle }),
    Layer.succeed(MetricsToken, Option.fromUndefinedOr(options.metricsToken)),
    TokenCounterLive.layer,
    MediaProbeLive.layer,
    ChatDialectsLive.layer
  ).pipe(
    Layer.provideMerge(store),
    // The operator config and its plugins first: a bad file or plugin stops the start before the database opens.
    Layer.provideMerge(registry.pipe(Layer.provideMerge(config)))
  )
  const videos = VideoTasks.layerWith({ ...defaultVideoWorkerOptions, ...options.video }).pipe(
    Layer.provideMerge(FileContentStore.layer(options.contentDir)),
    Layer.provide(PgVideoTasks.layer)
  )
  // The chat pipeline stores Responses API turns itself (its storage step); background responses run in a worker.
  const chat = ChatGateway.layer.pipe(Layer.provide(PgResponseStore.layer))
  const background = BackgroundResponses.layerWith({ ...defaultBackgroundOptions, ...options.responses }).pipe(
    Layer.provide(Layer.merge(PgBackgroundResponses.layer, chat))
  )
  const responses = Layer.merge(ResponsesGateway.layer, Conversations.layer).pipe(
    Layer.provide(
      Layer.mergeAll(PgResponseStore.layer, PgBackgroundResponses.layer, PgConversations.layer, background)
    ),
    Layer.provideMerge(chat)
  )
  const batches = Layer.mergeAll(BatchOperator.layer, PrometheusRegistry.layer).pipe(
    Layer.provideMerge(Batches.layerWith(options.batches ?? {})),
    Layer.provide(Layer.mergeAll(PgBatches.layer, PgResponseStore.layer, PgConversations.layer, vendorBatchesLayer))
  )
  return Layer.mergeAll(
    responses,
    batches,
    ImageGateway.layer,
    EmbeddingsGateway.layer,
    EndpointGateway.layer,
    AudioGateway.layer,
    videos
  ).pipe(Layer.provideMerge(core))
}

export const routesLayer = Layer.mergeAll(
  AdminApi.layer,
  StatementsApi.layer,
  AuditApi.layer,
  ReplayApi.layer,
  ModelsApi.layer,
  AdminVideosApi.layer,
  AdminBatchesApi.layer,
  UpstreamsApi.layer,
  AlertsApi.layer,
  UsageApi.layer,
  ChatApi.layer,
  ResponsesApi.layer,
  ConversationsApi.layer,
  GeminiApi.layer,
  ImagesApi.layer,
  EmbeddingsApi.layer,
  EndpointApi.layer,
  AudioApi.layer,
  VideosApi.layer,
  FilesApi.layer,
  BatchesApi.layer,
  MessageBatchesApi.layer,
  ConsoleApp.layer,
  PublicApi.layer,
  HttpRouter.add("GET", "/metrics", scrape),
  unroutableLayer
)

/**
 * Idle keep-alive connections stay open 65 s, past the 60 s idle timeout of common load balancers and SDK agents:
 * with Node's default of 5 s a client that reuses a connection just as the server closes it gets ECONNRESET on a
 * request the gateway never read.
 */
const KEEP_ALIVE_MILLIS = 65_000
const makeServer = () => {
  const server = createServer()
  server.keepAliveTimeout = KEEP_ALIVE_MILLIS
  server.headersTimeout = KEEP_ALIVE_MILLIS + 1_000
  // Edge around node:http: `close` ends the connections idle at that moment only; one whose response finishes during
  // the shutdown grace would then stay open for the keep-alive time and hold the shutdown to the end of the grace.
  const close = server.close.bind(server)
  server.close = (callback) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 100)
    sweep.unref()
    server.once("close", () => clearInterval(sweep))
    return close(callback)
  }
  return server
}

/**
 * The HTTP server on `host:port` (port 0 = ephemeral) serving every route over `services`.
 *
 * The services (store, migrations, ledger writer, workers) are built before the port is opened: a connection made
 * while the gateway starts is refused by the system rather than accepted and left unanswered. On shutdown the port
 * closes at once; requests in flight, streams included, have `shutdownGraceSeconds` to finish (each settling as it
 * ends) before the rest are interrupted (settled for what was delivered), and the services close after the server.
 */
export const serverLayer = <E, R>(
  services: Layer.Layer<R, E>,
  listen: { readonly port: number; readonly host: string; readonly shutdownGraceSeconds?: number | undefined },
  tracing?: Tracing.TracingOptions | undefined
) => {
  const server = HttpRouter.serve(routesLayer, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(
      NodeHttpServer.layer(makeServer, {
        port: listen.port,
        host: listen.host,
        gracefulShutdownTimeout: Duration.seconds(listen.shutdownGraceSeconds ?? DEFAULT_SHUTDOWN_GRACE_SECONDS)
      })
    ),
    Layer.provide(services)
  )
  // Without an OTLP endpoint nobody reads spans: `traced` steps then make none (see app/Traced.ts).
  return tracing === undefined
    ? server.pipe(Layer.provide(Layer.succeed(References.TracerEnabled, false)))
    : server.pipe(Layer.provide(Tracing.layer(tracing)))
}

/** How long a stopping gateway lets requests in flight finish (`TOLLGATE_SHUTDOWN_GRACE_SECONDS`). */
export const DEFAULT_SHUTDOWN_GRACE_SECONDS = 10
