/**
 * The store of record: one `SqlClient` over the Postgres wire protocol, whatever the transport. `DATABASE_URL` set →
 * that server; unset → an embedded PGlite database under the data dir, reached through an in-process duplex. Same
 * migrations, same SQL, same type codecs on both.
 */
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { useBaselineWasmTier } from "./BaselineWasmTier.ts"
import { collectGarbage } from "../runtime/CollectGarbage.ts"
import { migrate } from "./Migrations.ts"
import { sealUnhashedEvents } from "./PgAudit.ts"
import { pgliteStream } from "./PgliteDuplex.ts"

export type StoreKind = "postgres" | "pglite"

/** What the rest of the app may know about the store: its kind (pool sizing, writer shards) and nothing else. */
export class StoreInfo extends Context.Service<StoreInfo, { readonly kind: StoreKind }>()(
  "tollgate/adapters/store/StoreInfo"
) {}

export type DatabaseOptions =
  | { readonly kind: "postgres"; readonly url: Redacted.Redacted<string>; readonly maxConnections?: number }
  | {
      readonly kind: "pglite"
      /** undefined → an in-memory database (tests). */
      readonly dataDir: string | undefined
      /**
       * A data dir dumped by PGlite's `dumpDataDir`, to start a new database from instead of running `initdb`
       * (tests start each in-memory database from one migrated copy: `initdb` costs seconds of CPU per database).
       */
      readonly seed?: Blob
    }

/**
 * PGlite's shared buffers: 32 MB instead of Postgres's 128 MB, all of which PGlite touches at start. An idle
 * embedded gateway is ~100 MB smaller and the ledger's workload runs as fast (bench/README.md, "Start-up and
 * memory"); the data files stay in the operating system's page cache beyond them.
 */
const PGLITE_SHARED_BUFFERS = "32MB"

const pgliteClient = (dataDir: string | undefined, seed: Blob | undefined) =>
  Layer.unwrap(
    Effect.gen(function* () {
      if (dataDir !== undefined) yield* Effect.sync(() => mkdirSync(dataDir, { recursive: true }))
      const db = yield* Effect.acquireRelease(
        // Loaded only for the embedded store: a gateway on a Postgres server never loads PGlite.
        Effect.promise(() => {
          useBaselineWasmTier()
          return import("@electric-sql/pglite").then(({ PGlite }) =>
            PGlite.create({
              dataDir: dataDir ?? "memory://",
              startParams: [...PGlite.defaultStartParams, "-c", `shared_buffers=${PGLITE_SHARED_BUFFERS}`],
              ...(seed === undefined ? {} : { loadDataDir: seed })
            })
          )
        }),
        (db) => Effect.promise(() => db.close())
      )
      return PgClient.layer({
        stream: pgliteStream(db),
        username: "postgres",
        database: "postgres",
        maxConnections: 1
      })
    })
  )

const postgresClient = (url: Redacted.Redacted<string>, maxConnections: number) =>
  PgClient.layer({ url, maxConnections, connectTimeout: "5 seconds" })

/** Whether `dataDir` holds a PGlite database already (Postgres writes PG_VERSION first). */
export const isDatabase = (dataDir: string): boolean => existsSync(join(dataDir, "PG_VERSION"))

/** SqlClient + StoreInfo with every migration applied. */
export const layer = (
  options: DatabaseOptions
): Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | StoreInfo, unknown> =>
  Layer.unwrap(
    Effect.sync(() => {
      // Read before PGlite opens the folder: the start that creates the database collects its garbage after.
      const creates = options.kind === "pglite" && options.dataDir !== undefined && !isDatabase(options.dataDir)
      const client =
        options.kind === "postgres"
          ? postgresClient(options.url, options.maxConnections ?? 10)
          : pgliteClient(options.dataDir, options.seed)
      // Events from before tamper evidence get their hashes here, before anything else can write.
      const migrated = Layer.effectDiscard(
        Effect.gen(function* () {
          yield* migrate()
          yield* Effect.flatMap(SqlClient.SqlClient, sealUnhashedEvents)
          if (creates) yield* collectGarbage
        })
      ).pipe(Layer.provideMerge(client))
      return Layer.merge(migrated, Layer.succeed(StoreInfo, StoreInfo.of({ kind: options.kind })))
    })
  )

export const postgresUrl = (url: string): Redacted.Redacted<string> => Redacted.make(url)
