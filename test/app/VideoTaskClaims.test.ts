/**
 * Video workers with different model catalogs on one database (embedded and real Postgres): each claims only the
 * tasks its catalog can follow — the model, and once dispatched the upstream that took it — so each completes its
 * own tasks and neither fails the other's; a task whose model no instance serves stays queued until its deadline,
 * when whichever instance polls fails it and refunds the hold. TestClock drives the worker; `pollDue` by hand.
 */
import { Alerts } from "../../src/app/alerts/Alerts.ts"
import * as PgAlertStore from "../../src/adapters/store/PgAlertStore.ts"
import { NodeServices } from "@effect/platform-node"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FileContentStore from "../../src/adapters/content/FileContentStore.ts"
import { guardedFetcherLayer } from "../../src/adapters/fetch/GuardedFetcher.ts"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import * as PgEventStore from "../../src/adapters/store/PgEventStore.ts"
import { UpstreamClient } from "../../src/adapters/upstream/UpstreamClient.ts"
import { defaultLedgerOptions, Ledger } from "../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../src/adapters/store/PgLedgerWriter.ts"
import { OperatorConfig } from "../../src/app/OperatorConfig.ts"
import { defaultVideoWorkerOptions, VideoTasks } from "../../src/app/VideoTasks.ts"
import { parseDecimal } from "../../src/domain/Money.ts"
import type { VideoRequest } from "../../src/domain/video/VideoSpec.ts"
import { ImageFetcherService } from "../../src/plugins/chat-image/ImageInputs.ts"
import * as PluginsLayer from "../../src/PluginsLayer.ts"
import * as MediaProbeLive from "../../src/adapters/media/MediaProbeLive.ts"
import { availableStores } from "../support/TestDatabase.ts"
import * as PgVideoTasks from "../../src/adapters/store/PgVideoTasks.ts"

let sim: RunningSimulator
/** Another vendor account: it has never heard of the tasks created on `sim` (a poll there answers 404). */
let otherSim: RunningSimulator
let dir: string
beforeAll(async () => {
  sim = await startSimulator({ videoMillis: 150 })
  otherSim = await startSimulator({ videoMillis: 150 })
  dir = mkdtempSync(join(tmpdir(), "tollgate-videoclaims-"))
}, 30_000)
afterAll(async () => {
  await sim.close()
  await otherSim.close()
  rmSync(dir, { recursive: true, force: true })
})

const ark = (name: string, baseUrl: string) =>
  `${name}: { protocol: ark, baseUrl: "${baseUrl}/api/v3", apiKey: "sk-sim-test-key", timeoutMs: 20000 }`

/** An instance's operator config: its upstreams and its video models, each `[id, upstream, upstream model]`. */
const configFile = (
  name: string,
  upstreams: ReadonlyArray<string>,
  models: ReadonlyArray<readonly [string, string, string]>
): string => {
  const path = join(dir, `${name}-${randomUUID()}.yaml`)
  writeFileSync(
    path,
    `upstreams:
${upstreams.map((u) => `  ${u}`).join("\n")}
models:
${models.map(([id, upstream, upstreamModel]) => `  - { id: ${id}, plugin: video, upstreams: [${upstream}], upstreamModel: ${upstreamModel}, pricing: { output: "1.40" } }`).join("\n")}
video: { pollIntervalMs: 100, deadlineMinutes: 30, retentionDays: 7 }
`
  )
  return path
}

/** One gateway instance's video worker over the shared store and ledger, with its own catalog; the loop is off. */
const instance = (configPath: string) =>
  Effect.map(
    Layer.build(
      VideoTasks.layerWith({ ...defaultVideoWorkerOptions, enabled: false }).pipe(
        Layer.provide(PgVideoTasks.layer),
        Layer.provide(
          Layer.mergeAll(
            FileContentStore.layer(join(dir, `content-${randomUUID()}`)),
            MediaProbeLive.layer,
            // Its failed tasks raise alerts into the shared database's outbox.
            Alerts.layer.pipe(Layer.provide(PgAlertStore.layer)),
            PluginsLayer.layerFrom(() => "test").pipe(
              Layer.provide(UpstreamClient.layer),
              Layer.provide(ImageFetcherService.layer),
              Layer.provideMerge(guardedFetcherLayer({}))
            )
          )
        ),
        Layer.provideMerge(OperatorConfig.layerFromFile(configPath).pipe(Layer.provide(NodeServices.layer)))
      )
    ),
    (context) => Context.get(context, VideoTasks)
  )

const request = (prompt: string): VideoRequest => ({
  prompt,
  seconds: 4,
  resolution: "480p",
  ratio: "16:9",
  inputType: "text_to_video",
  images: [],
  videos: []
})

const customer = Effect.gen(function* () {
  const ledger = yield* Ledger
  const account = yield* ledger.openAccount("video-claims")
  yield* ledger.deposit(account.id, parseDecimal("10") as bigint, `seed-${account.id}`)
  return { keyId: randomUUID(), accountId: account.id, models: null, spendLimit: null }
})

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** Which tasks each worker holds a lease on right now. */
const leaseOwners = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ task_id: string; owner: string }>`SELECT task_id, owner FROM video_task_leases`
  return rows
})

const SLOW = 120_000

for (const { target, storeLayer } of availableStores("video task claims")) {
  const shared = Layer.mergeAll(
    PgLedgerWriter.layerWith({ ...defaultLedgerOptions, shards: 1, sweepIntervalMillis: 3_600_000 }),
    PgEventStore.layer
  ).pipe(Layer.provideMerge(storeLayer))

  describe(`video task claims on ${target.name}`, () => {
    it.effect(
      "two instances with different catalogs each complete their own tasks and never fail the other's",
      () =>
        Effect.gen(function* () {
          // A serves the fast model on sim-ark. B serves the full model on sim-ark, and the fast model too, but on
          // another vendor account (`other-ark`), where A's fast tasks do not exist. C serves a model nobody polls.
          const a = yield* instance(
            configFile("a", [ark("sim-ark", sim.baseUrl)], [["video-fast", "sim-ark", "seedance-2-0-fast"]])
          )
          const b = yield* instance(
            configFile(
              "b",
              [ark("sim-ark", sim.baseUrl), ark("other-ark", otherSim.baseUrl)],
              [
                ["video-full", "sim-ark", "seedance-2-0"],
                ["video-fast", "other-ark", "seedance-2-0-fast"]
              ]
            )
          )
          const c = yield* instance(
            configFile("c", [ark("sim-ark", sim.baseUrl)], [["video-retired", "sim-ark", "seedance-2-0"]])
          )
          const key = yield* customer
          const submit = (videos: typeof a, model: string, prompt: string) =>
            Effect.map(
              videos.submit({ key, model, request: request(prompt), idempotencyKey: null, requestId: null }),
              ({ task }) => task.taskId
            )
          const ofA = [yield* submit(a, "video-fast", "a's first"), yield* submit(a, "video-fast", "a's second")]
          const ofB = [yield* submit(b, "video-full", "b's only")]
          const orphan = yield* submit(c, "video-retired", "nobody serves this model any more")

          // A creates its tasks upstream first; B leaves them alone (and the orphan), and creates its own.
          assert.strictEqual((yield* a.pollDue).claimed, 2)
          assert.strictEqual((yield* b.pollDue).claimed, 1)
          const owned = (videos: typeof a) =>
            Effect.map(leaseOwners, (rows) =>
              rows
                .filter((r) => r.owner === videos.workerId)
                .map((r) => r.task_id)
                .toSorted()
            )
          assert.deepStrictEqual(yield* owned(a), ofA.toSorted())
          assert.deepStrictEqual(yield* owned(b), ofB)

          const statusOf = (id: string) =>
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              const [row] = yield* sql<{ status: string; error_code: string | null }>`
                SELECT status, error_code FROM video_tasks WHERE id = ${id}`
              return row
            })
          let finished = false
          for (let round = 0; round < 200 && !finished; round++) {
            yield* TestClock.adjust("150 millis")
            yield* realSleep(30)
            // B polls first every round: A's tasks are due for it whenever their leases lapse.
            const byB = yield* b.pollDue
            const byA = yield* a.pollDue
            assert.strictEqual(byB.failed + byA.failed, 0, "no task failed")
            for (const id of yield* owned(b)) assert.include(ofB, id, "B took a task it cannot follow")
            for (const id of yield* owned(a)) assert.include(ofA, id, "A took a task it cannot follow")
            const statuses = yield* Effect.forEach([...ofA, ...ofB], statusOf)
            finished = statuses.every((s) => s.status === "completed")
          }
          for (const id of [...ofA, ...ofB]) {
            assert.deepStrictEqual(yield* statusOf(id), { status: "completed", error_code: null }, id)
          }
          // Nobody serves the orphan's model: it waits, queued, never claimed.
          assert.deepStrictEqual(yield* statusOf(orphan), { status: "queued", error_code: null })
          assert.strictEqual((yield* a.pollDue).claimed + (yield* b.pollDue).claimed, 0)

          // Past its deadline any instance takes it, and fails it with the whole hold refunded.
          yield* TestClock.adjust("31 minutes")
          const swept = yield* b.pollDue
          assert.deepStrictEqual([swept.claimed, swept.failed], [1, 1])
          assert.deepStrictEqual(yield* statusOf(orphan), { status: "failed", error_code: "deadline_exceeded" })
          const sql = yield* SqlClient.SqlClient
          const [hold] = yield* sql<{ status: string; captured: string; refunded: string }>`
            SELECT h.status, h.captured::text, h.refunded::text FROM holds h
            JOIN video_tasks t ON t.hold_id = h.hold_id WHERE t.id = ${orphan}`
          assert.deepStrictEqual(hold, { status: "released", captured: "0", refunded: "56833" })
          const [account] = yield* sql<{ held: string }>`
            SELECT held::text FROM accounts WHERE id = ${key.accountId}::uuid`
          assert.strictEqual(account.held, "0")
          // Each of the three finished tasks was settled once.
          const [{ settled }] = yield* sql<{ settled: number }>`
            SELECT count(*)::int AS settled FROM holds WHERE account_id = ${key.accountId}::uuid AND status = 'settled'`
          assert.strictEqual(settled, 3)
        }).pipe(Effect.scoped, Effect.provide(shared)),
      SLOW
    )
  })
}
