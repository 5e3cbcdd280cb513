/**
 * Storage test support: every storage suite runs against an embedded PGlite database and a real Postgres server.
 * The real server is `TEST_DATABASE_URL` when set (each suite gets a fresh database of its own, dropped afterwards);
 * otherwise, where a Docker engine answers, a throwaway `@testcontainers/postgresql` server; otherwise the suite is
 * skipped with one visible line saying why.
 */
import { PgClient } from "@effect/sql-pg"
import { describe, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { execFileSync } from "node:child_process"
import { randomUUID } from "node:crypto"
import { join } from "node:path"
import * as Database from "../../src/adapters/store/Database.ts"
import { memoryPglite } from "./PgliteTemplate.ts"

export interface StoreTarget {
  readonly name: "pglite" | "postgres"
  /** undefined when this target cannot run here; `skipReason` says why. */
  readonly layer: Layer.Layer<SqlClient.SqlClient | PgClient.PgClient | Database.StoreInfo, unknown> | undefined
  readonly skipReason?: string
}

const dockerAnswers = (): boolean => {
  try {
    execFileSync("docker", ["info"], { stdio: "ignore", timeout: 5_000 })
    return true
  } catch {
    return false
  }
}

const withUrl = (url: URL, database: string): string => {
  const copy = new URL(url.toString())
  copy.pathname = `/${database}`
  return copy.toString()
}

/** A fresh database on the server at `baseUrl`, created for one suite and dropped when its layer closes. */
export const freshPostgres = (baseUrl: string) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const name = `tollgate_t_${randomUUID().replaceAll("-", "").slice(0, 16)}`
      const admin = PgClient.layer({ url: Redacted.make(baseUrl), maxConnections: 1 })
      const run = (statement: string) =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe(statement)
        }).pipe(Effect.provide(admin))
      yield* Effect.acquireRelease(run(`CREATE DATABASE ${name}`), () =>
        run(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).pipe(Effect.ignore)
      )
      return Database.layer({
        kind: "postgres",
        url: Redacted.make(withUrl(new URL(baseUrl), name)),
        maxConnections: 8
      })
    })
  )

export const pgliteTarget: StoreTarget = {
  name: "pglite",
  layer: Layer.suspend(() => Database.layer(memoryPglite()))
}

const postgresTarget = (): StoreTarget => {
  const url = process.env.TEST_DATABASE_URL
  if (url !== undefined && url.length > 0) return { name: "postgres", layer: freshPostgres(url) }
  if (dockerAnswers()) {
    return {
      name: "postgres",
      layer: Layer.unwrap(
        Effect.gen(function* () {
          const { PostgreSqlContainer } = yield* Effect.promise(() => import("@testcontainers/postgresql"))
          const container = yield* Effect.acquireRelease(
            Effect.promise(() => new PostgreSqlContainer("postgres:16-alpine").start()),
            (c) => Effect.promise(() => c.stop())
          )
          return freshPostgres(container.getConnectionUri())
        })
      )
    }
  }
  return {
    name: "postgres",
    layer: undefined,
    skipReason: "real-Postgres suite skipped: TEST_DATABASE_URL is not set and no Docker engine answers"
  }
}

export const storeTargets: ReadonlyArray<StoreTarget> = [pgliteTarget, postgresTarget()]

const announced = new Set<string>()
/** Prints the skip reason once per process, so a skipped real-server suite is visible in the test output. */
export const announceSkip = (target: StoreTarget): void => {
  if (target.skipReason !== undefined && !announced.has(target.skipReason)) {
    announced.add(target.skipReason)
    console.warn(`[tollgate] ${target.skipReason}`)
  }
}

/**
 * The targets a storage suite runs on here. Each target that cannot run is announced once and registered as a skipped
 * suite named `${suite} on <target>`, so the skip shows in the report; the caller loops over the others.
 */
export const availableStores = (
  suite: string
): ReadonlyArray<{ readonly target: StoreTarget; readonly storeLayer: NonNullable<StoreTarget["layer"]> }> =>
  storeTargets.flatMap((target) => {
    announceSkip(target)
    if (target.layer === undefined) {
      describe.skip(`${suite} on ${target.name}`, () => it("skipped", () => undefined))
      return []
    }
    return [{ target, storeLayer: target.layer }]
  })

/** Runs one statement on a real Postgres (promise-based, for suites that start whole gateways). */
export const runPostgres = (url: string, statement: string) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      return yield* sql.unsafe(statement)
    }).pipe(Effect.provide(PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))
  )

/** A new empty database on the server at `baseUrl`, for gateways that must share one; `drop` removes it. */
export const createPostgresDatabase = async (
  baseUrl: string
): Promise<{ readonly url: string; drop(): Promise<void> }> => {
  const name = `tollgate_t_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  await runPostgres(baseUrl, `CREATE DATABASE ${name}`)
  return {
    url: withUrl(new URL(baseUrl), name),
    drop: async () => {
      await runPostgres(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    }
  }
}

/**
 * A database gateways open one after another (a restart, a second instance): a new database on `TEST_DATABASE_URL`'s
 * server when it is set, else a PGlite data directory under `dir` — its first opening starts from the suites' migrated
 * template, every later one opens what is on disk (`opening(n)`, n counted from 1). `drop` removes the server's one.
 */
export const restartableDatabase = async (
  dir: string
): Promise<{ readonly opening: (n: number) => Database.DatabaseOptions; drop(): Promise<void> }> => {
  const baseUrl = process.env.TEST_DATABASE_URL
  if (baseUrl !== undefined && baseUrl !== "") {
    const created = await createPostgresDatabase(baseUrl)
    const database: Database.DatabaseOptions = {
      kind: "postgres",
      url: Redacted.make(created.url),
      maxConnections: 4
    }
    return { opening: () => database, drop: created.drop }
  }
  const template = memoryPglite()
  const dataDir = join(dir, "db")
  return {
    opening: (n) =>
      n === 1 && "seed" in template ? { kind: "pglite", dataDir, seed: template.seed } : { kind: "pglite", dataDir },
    drop: async () => {}
  }
}
