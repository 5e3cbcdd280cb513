/**
 * The composition root's building blocks: which adapters back which services, and the HTTP server over them.
 * `main.ts` reads the configuration and launches; tests build the same graph on an ephemeral port.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Layer, type Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import * as Database from "./adapters/store/Database.ts"
import * as PgAccounts from "./adapters/store/PgAccounts.ts"
import * as PgEventStore from "./adapters/store/PgEventStore.ts"
import * as PgKeys from "./adapters/store/PgKeys.ts"
import * as PgReplay from "./adapters/store/PgReplay.ts"
import { defaultLedgerOptions, Ledger, type LedgerOptions } from "./app/Ledger.ts"
import { ModelCatalog } from "./app/ModelCatalog.ts"
import * as AdminApi from "./http/admin/AdminApi.ts"
import * as PublicApi from "./http/PublicApi.ts"
import { HttpSettings } from "./http/Route.ts"

export interface AppOptions {
  readonly database: Database.DatabaseOptions
  readonly adminToken: Redacted.Redacted<string>
  readonly maxBodyBytes: number
  readonly ledger?: Partial<LedgerOptions>
}

/** Every service the HTTP layer needs, over the chosen store. */
export const servicesLayer = (options: AppOptions) => {
  const store = Database.layer(options.database)
  // Many writer shards help a server (separate accounts commit in parallel); PGlite is one session anyway.
  const shards = options.database.kind === "postgres" ? defaultLedgerOptions.shards : 1
  return Layer.mergeAll(
    Ledger.layerWith({ ...defaultLedgerOptions, shards, ...options.ledger }),
    PgAccounts.layer,
    PgKeys.layer,
    PgReplay.layer,
    PgEventStore.layer,
    ModelCatalog.empty,
    Layer.succeed(HttpSettings, HttpSettings.of({ maxBodyBytes: options.maxBodyBytes })),
    Layer.succeed(AdminApi.AdminToken, options.adminToken)
  ).pipe(Layer.provideMerge(store))
}

export const routesLayer = Layer.mergeAll(AdminApi.layer, PublicApi.layer)

/** The HTTP server on `host:port` (port 0 = ephemeral) serving every route over `services`. */
export const serverLayer = <E, R>(
  services: Layer.Layer<R, E>,
  listen: { readonly port: number; readonly host: string }
) =>
  HttpRouter.serve(routesLayer, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(services),
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: listen.port, host: listen.host }))
  )
