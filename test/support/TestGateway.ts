/**
 * A real gateway for tests: the production composition (AppLayer) on an in-memory PGlite database, listening on an
 * ephemeral loopback port, with a random admin token. Promise-based so any test (or SDK client) can use it.
 */
import { ConfigProvider, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { HttpServer } from "effect/http"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { serverLayer, servicesLayer } from "../../src/AppLayer.ts"
import type { DatabaseOptions } from "../../src/adapters/store/Database.ts"
import type { LedgerOptions } from "../../src/app/Ledger.ts"
import type { VideoWorkerOptions } from "../../src/app/VideoTasks.ts"
import type { BackgroundOptions } from "../../src/app/responses/BackgroundWorker.ts"
import type { BatchWorkerOptions } from "../../src/app/batch/Batches.ts"
import type { AuthThrottleOptions } from "../../src/http/AuthThrottle.ts"
import type { TracingOptions } from "../../src/adapters/telemetry/Tracing.ts"
import { memoryPglite } from "./PgliteTemplate.ts"

export interface TestGateway {
  readonly url: string
  readonly adminToken: string
  close(): Promise<void>
}

export const startTestGateway = async (
  options: {
    readonly database?: DatabaseOptions
    readonly maxBodyBytes?: number
    readonly ledger?: Partial<LedgerOptions>
    /** An operator config file; omitted → the built-in simulator catalog. */
    readonly configPath?: string
    /** Hosts the guarded fetcher may reach although they are private (loopback test servers). */
    readonly fetchAllowHosts?: ReadonlyArray<string>
    readonly video?: Partial<VideoWorkerOptions>
    /** Background responses' worker (shorter leases in tests that cut the database). */
    readonly responses?: Partial<BackgroundOptions>
    /** The batch worker (shorter leases in restart tests). */
    readonly batches?: Partial<BatchWorkerOptions>
    /** Where videos are stored; omitted → a temporary directory removed on close. */
    readonly contentDir?: string
    /** Largest transcription upload; omitted → 25 MiB. */
    readonly maxAudioBytes?: number
    /** `/metrics` bearer token; omitted → open. */
    readonly metricsToken?: string
    /** Redis for rate limits shared across instances; omitted → in process. */
    readonly redisUrl?: string
    /** An OTLP collector to send traces to; omitted → no tracing. */
    readonly tracing?: TracingOptions
    /** Failed-authentication throttling; omitted → the production defaults (20 a minute per address). */
    readonly authThrottle?: Partial<AuthThrottleOptions>
  } = {}
): Promise<TestGateway> => {
  const adminToken = `tga_test_${randomBytes(16).toString("hex")}`
  const ownContentDir = options.contentDir === undefined ? mkdtempSync(join(tmpdir(), "tollgate-content-")) : undefined
  const contentDir = options.contentDir ?? (ownContentDir as string)
  const services = servicesLayer({
    database: options.database ?? memoryPglite(),
    adminToken: Redacted.make(adminToken),
    maxBodyBytes: options.maxBodyBytes ?? 32 * 1024 * 1024,
    ...(options.ledger ? { ledger: options.ledger } : {}),
    configPath: options.configPath,
    imageFetch: { allowHosts: options.fetchAllowHosts ?? [] },
    contentDir,
    video: options.video,
    responses: options.responses,
    batches: options.batches,
    maxAudioBytes: options.maxAudioBytes,
    metricsToken: options.metricsToken === undefined ? undefined : Redacted.make(options.metricsToken),
    redisUrl: options.redisUrl === undefined ? undefined : Redacted.make(options.redisUrl),
    authThrottle: options.authThrottle
  })
  const removeContent = () => {
    if (ownContentDir !== undefined) rmSync(ownContentDir, { recursive: true, force: true })
  }
  const scope = Effect.runSync(Scope.make())
  // The environment as it is now, as a process started now would see it: Effect's default provider is a copy of
  // `process.env` taken at its first use, which in a worker shared by many test files (vitest.config.ts) can be
  // another file's moment.
  const context = await Effect.runPromise(
    Layer.buildWithScope(serverLayer(services, { port: 0, host: "127.0.0.1" }, options.tracing), scope).pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv())
    )
  ).catch(async (error: unknown) => {
    // A failed start still opened resources (an embedded database): close them before reporting the failure.
    await Effect.runPromise(Scope.close(scope, Exit.void))
    removeContent()
    throw error
  })
  const server = context.mapUnsafe.get(HttpServer.HttpServer.key) as HttpServer.HttpServer["Service"]
  const address = server.address
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  return {
    url: `http://127.0.0.1:${address.port}`,
    adminToken,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void)).finally(removeContent)
  }
}
