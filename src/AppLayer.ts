/**
 * The composition root's building blocks: which adapters back which services, and the HTTP server over them.
 * `main.ts` reads the configuration and launches; tests build the same graph on an ephemeral port.
 */
import { NodeHttpServer, NodeServices } from "@effect/platform-node"
import { Effect, Layer, type Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import * as Database from "./adapters/store/Database.ts"
import * as PgAccounts from "./adapters/store/PgAccounts.ts"
import * as PgEventStore from "./adapters/store/PgEventStore.ts"
import * as PgKeys from "./adapters/store/PgKeys.ts"
import * as PgReplay from "./adapters/store/PgReplay.ts"
import { UpstreamClient } from "./adapters/upstream/UpstreamClient.ts"
import { ChatGateway } from "./app/ChatGateway.ts"
import { ImageGateway } from "./app/ImageGateway.ts"
import { defaultLedgerOptions, Ledger, type LedgerOptions } from "./app/Ledger.ts"
import { OperatorConfig, type OperatorConfigError } from "./app/OperatorConfig.ts"
import type { SimulatorStartError } from "./adapters/simulator/Simulator.ts"
import * as AdminApi from "./http/admin/AdminApi.ts"
import * as ChatApi from "./http/ChatApi.ts"
import * as ImagesApi from "./http/ImagesApi.ts"
import { ImageFetcherService } from "./plugins/chat-image/ImageInputs.ts"
import { GuardedFetcher, type GuardedFetcherOptions } from "./adapters/fetch/GuardedFetcher.ts"
import * as DefaultCatalog from "./plugins/DefaultCatalog.ts"
import * as PluginRegistry from "./plugins/PluginRegistry.ts"
import * as PublicApi from "./http/PublicApi.ts"
import { HttpSettings } from "./http/Route.ts"

export interface AppOptions {
  readonly database: Database.DatabaseOptions
  readonly adminToken: Redacted.Redacted<string>
  readonly maxBodyBytes: number
  readonly ledger?: Partial<LedgerOptions>
  /** The operator config file; undefined → the built-in simulator catalog. */
  readonly configPath?: string | undefined
  /** The guarded fetcher of user image links; `allowHosts` opens internal hosts (tests, internal deployments). */
  readonly imageFetch?: GuardedFetcherOptions | undefined
}

const operatorConfigLayer = (
  configPath: string | undefined
): Layer.Layer<OperatorConfig, OperatorConfigError | SimulatorStartError> =>
  configPath === undefined
    ? DefaultCatalog.layer
    : OperatorConfig.layerFromFile(configPath).pipe(Layer.provide(NodeServices.layer))

/** Every service the HTTP layer needs, over the chosen store. */
export const servicesLayer = (options: AppOptions) => {
  const store = Database.layer(options.database)
  // Many writer shards help a server (separate accounts commit in parallel); PGlite is one session anyway.
  const shards = options.database.kind === "postgres" ? defaultLedgerOptions.shards : 1
  const config = operatorConfigLayer(options.configPath)
  const ledger = Layer.unwrap(
    Effect.map(OperatorConfig, (operator) =>
      Ledger.layerWith({
        ...defaultLedgerOptions,
        shards,
        holdTtlSeconds: operator.ledger.holdTtlSeconds,
        ...options.ledger
      })
    )
  )
  const registry = PluginRegistry.layerFrom((id) =>
    options.configPath === undefined ? DefaultCatalog.SIMULATOR_OWNER : `tollgate:${id.split("-")[0]}`
  ).pipe(
    Layer.provideMerge(UpstreamClient.layer),
    Layer.provide(ImageFetcherService.layer.pipe(Layer.provide(GuardedFetcher.layer(options.imageFetch ?? {}))))
  )
  const core = Layer.mergeAll(
    ledger,
    PgAccounts.layer,
    PgKeys.layer,
    PgReplay.layer,
    PgEventStore.layer,
    registry,
    Layer.succeed(HttpSettings, HttpSettings.of({ maxBodyBytes: options.maxBodyBytes })),
    Layer.succeed(AdminApi.AdminToken, options.adminToken)
  ).pipe(Layer.provideMerge(Layer.merge(store, config)))
  return Layer.merge(ChatGateway.layer, ImageGateway.layer).pipe(Layer.provideMerge(core))
}

export const routesLayer = Layer.mergeAll(AdminApi.layer, ChatApi.layer, ImagesApi.layer, PublicApi.layer)

/** The HTTP server on `host:port` (port 0 = ephemeral) serving every route over `services`. */
export const serverLayer = <E, R>(
  services: Layer.Layer<R, E>,
  listen: { readonly port: number; readonly host: string }
) =>
  HttpRouter.serve(routesLayer, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(services),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: listen.port, host: listen.host }))
  )
