/**
 * The video worker's clock-driven rules, driven by TestClock on the embedded store: a task the upstream never
 * finishes fails at its deadline with a full refund, and stored content is deleted after the retention period with
 * the expiry recorded. The loop is off; each round is `pollDue` by hand.
 */
import { memoryPglite } from "../support/PgliteTemplate.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Fiber, Layer, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { randomUUID } from "node:crypto"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { servicesLayer } from "../../src/AppLayer.ts"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { Accounts } from "../../src/app/Accounts.ts"
import { Ledger } from "../../src/app/Ledger.ts"
import { defaultVideoWorkerOptions, MISSING_POLLS_BEFORE_FAILING, VideoTasks } from "../../src/app/VideoTasks.ts"
import { parseDecimal } from "../../src/domain/Money.ts"
import type { VideoRequest } from "../../src/domain/video/VideoSpec.ts"
import { FAST, videoConfigYaml } from "../http/videos/VideoHarness.ts"
import * as PgVideoTasks from "../../src/adapters/store/PgVideoTasks.ts"

let sim: RunningSimulator
/** Tasks stay queued upstream for their first 2 s: long enough to cancel one there. */
let slowSim: RunningSimulator
let dir: string
let configPath: string
let slowConfigPath: string
beforeAll(async () => {
  sim = await startSimulator({ videoMillis: 150 })
  slowSim = await startSimulator({ videoMillis: 20_000 })
  dir = mkdtempSync(join(tmpdir(), "tollgate-videotasks-"))
  configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, videoConfigYaml(sim.baseUrl, 100))
  slowConfigPath = join(dir, "tollgate-slow.yaml")
  writeFileSync(slowConfigPath, videoConfigYaml(slowSim.baseUrl, 100))
}, 30_000)
afterAll(async () => {
  await sim.close()
  await slowSim.close()
  rmSync(dir, { recursive: true, force: true })
})

const services = (contentDir = join(dir, `content-${randomUUID()}`), config = configPath) =>
  servicesLayer({
    database: memoryPglite(),
    adminToken: Redacted.make("tga_test_unused"),
    maxBodyBytes: 1024 * 1024,
    configPath: config,
    contentDir,
    video: { enabled: false },
    // Tests here jump the clock by days: the ledger's hold sweep (a query every 15 s by default) is not under test.
    ledger: { sweepIntervalMillis: 3_600_000 },
    // Nor is the background-responses worker, whose idle claim round (a query every 500 ms) would run a million times.
    responses: { pollMillis: 3_600_000, renewMillis: 3_600_000 },
    // Nor the batch worker's claim round (every second when busy, ten when idle).
    batches: { enabled: false },
    // Nor is the audit chain's checkpoint (every 10 minutes: a thousand rounds of queries in a week).
    auditCheckpointMillis: 30 * 86_400_000
  })

const request = (prompt: string): VideoRequest => ({
  prompt,
  seconds: 4,
  resolution: "480p",
  ratio: "16:9",
  inputType: "text_to_video",
  images: [],
  videos: []
})

/** A task of the fast model for a new customer, submitted and created upstream by one worker round. */
const dispatched = (prompt: string) =>
  Effect.gen(function* () {
    const videos = yield* VideoTasks
    const key = yield* customer
    const { task } = yield* videos.submit({
      key,
      model: FAST,
      request: request(prompt),
      idempotencyKey: null,
      requestId: null
    })
    yield* videos.pollDue // creates the upstream task
    return { videos, key, task }
  })

/** An account with 10.00 and a key that exists only for the hold's bookkeeping. */
const customer = Effect.gen(function* () {
  const ledger = yield* Ledger
  const account = yield* ledger.openAccount("video")
  yield* ledger.deposit(account.id, parseDecimal("10") as bigint, "seed")
  return { keyId: randomUUID(), accountId: account.id, models: null, spendLimit: null }
})

const accountRow = (accountId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ captured: string; held: string }>`
      SELECT captured::text, held::text FROM accounts WHERE id = ${accountId}::uuid`
    return row
  })

/** The account's ledger after its opening and deposit: [type, amount, reason]. */
const ledgerOf = (accountId: string) =>
  Effect.gen(function* () {
    const events = yield* (yield* Accounts).ledger(accountId, 0n, 100)
    return events
      .filter((e) => e.type !== "AccountOpened" && e.type !== "FundsDeposited")
      .map((e) => {
        const data = e.data as Record<string, unknown>
        return [e.type, data.amount ?? data.captured ?? null, data.reason ?? null]
      })
  })

/** The task's polling lease: when it is due again (ms after the test clock's now) and the failures counted. */
const leaseOf = (taskId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    const [row] = yield* sql<{ until_ms: string; failures: number }>`
      SELECT (EXTRACT(EPOCH FROM lease_until) * 1000)::bigint::text AS until_ms, failures
      FROM video_task_leases WHERE task_id = ${taskId}`
    return { dueInMs: Number(row.until_ms) - now, failures: row.failures }
  })

/** Consecutive polls the upstream answered 404 for the task, as its lease counts them. */
const missingPollsOf = (taskId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ missing_polls: number }>`
      SELECT missing_polls FROM video_task_leases WHERE task_id = ${taskId}`
    return row.missing_polls
  })

/** Each test builds the whole service layer on a fresh embedded database: many seconds on a busy machine. */
const SLOW = 120_000

const realSleep = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

/** Rounds of the worker, moving the test clock past each poll interval and letting the simulator's wall clock run. */
const pollUntil = (done: () => Effect.Effect<boolean, unknown, VideoTasks | SqlClient.SqlClient>, rounds = 200) =>
  Effect.gen(function* () {
    const videos = yield* VideoTasks
    for (let i = 0; i < rounds; i++) {
      yield* videos.pollDue
      if (yield* done()) return
      yield* TestClock.adjust("150 millis")
      yield* realSleep(30)
    }
    assert.fail("the task did not reach the expected state")
  })

describe("VideoTasks with TestClock", () => {
  it.effect(
    "a task the upstream never finishes fails at its deadline and the hold is refunded in full",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("a stuck render [sim:video-stall]"),
          idempotencyKey: null,
          requestId: null
        })
        assert.strictEqual((yield* accountRow(key.accountId)).held, "56833")
        // Dispatched and polled for a while: still running.
        yield* pollUntil(() =>
          Effect.map(videos.get(key.accountId, task.taskId), (row) => row.status === "in_progress")
        )
        yield* TestClock.adjust("29 minutes")
        yield* videos.pollDue
        assert.strictEqual((yield* videos.get(key.accountId, task.taskId)).status, "in_progress")
        yield* TestClock.adjust("2 minutes")
        const report = yield* videos.pollDue
        assert.strictEqual(report.failed, 1)
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.strictEqual(row.status, "failed")
        assert.strictEqual(row.error_code, "deadline_exceeded")
        assert.strictEqual(row.hold_status, "released")
        assert.strictEqual(row.refunded, "56833")
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "0", held: "0" })
        // Nothing is left to poll.
        assert.strictEqual((yield* videos.pollDue).claimed, 0)
      }).pipe(Effect.provide(services())),
    SLOW
  )

  const contentDir = join(tmpdir(), `tollgate-content-${randomUUID()}`)
  it.effect(
    "stored content is deleted after the retention period and the expiry is recorded once",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("a short clip"),
          idempotencyKey: null,
          requestId: null
        })
        yield* pollUntil(() => Effect.map(videos.get(key.accountId, task.taskId), (row) => row.status === "completed"))
        const stored = yield* videos.content(key.accountId, task.taskId)
        assert.isAbove(stored.size, 1000)
        assert.isTrue(existsSync(join(contentDir, stored.key)))
        yield* TestClock.adjust("6 days")
        assert.strictEqual(yield* videos.sweepExpiredContent, 0)
        yield* TestClock.adjust("1 day")
        assert.strictEqual(yield* videos.sweepExpiredContent, 1)
        assert.strictEqual(yield* videos.sweepExpiredContent, 0)
        const gone = yield* Effect.flip(videos.content(key.accountId, task.taskId))
        assert.strictEqual(gone._tag, "VideoExpired")
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.isNotNull(row.content_expired_at)
        assert.strictEqual(row.status, "completed")
        const sql = yield* SqlClient.SqlClient
        const events = yield* sql<{ event_type: string }>`
        SELECT event_type FROM events WHERE stream_name = ${`video-${task.taskId}`} ORDER BY stream_position`
        assert.strictEqual(events.filter((e) => e.event_type === "VideoContentExpired").length, 1)
        assert.strictEqual(events[events.length - 1].event_type, "VideoContentExpired")
        assert.isFalse(existsSync(join(contentDir, stored.key)))
      }).pipe(Effect.provide(services(contentDir))),
    SLOW
  )
  it.effect(
    "upstream 429/5xx while polling: honours retry-after, else backs off exponentially, then resets",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("a long render [sim:video-stall]"),
          idempotencyKey: null,
          requestId: null
        })
        yield* videos.pollDue // creates the upstream task
        assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: 100, failures: 0 })
        // 429 with retry-after: 7 s, far above the 100 ms interval's back-off.
        sim.setFaults({ status: 429, retryAfterSeconds: 7 }, 1)
        yield* TestClock.adjust("100 millis")
        assert.strictEqual((yield* videos.pollDue).claimed, 1)
        assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: 7_000, failures: 1 })
        yield* TestClock.adjust("6999 millis")
        assert.strictEqual((yield* videos.pollDue).claimed, 0, "polled before the upstream's retry-after")
        yield* TestClock.adjust("1 millis")
        // 5xx without retry-after: the interval doubled per consecutive failure.
        sim.setFaults({ status: 503 }, 3)
        for (const [wait, failures] of [
          [200, 2],
          [400, 3],
          [800, 4]
        ] as const) {
          assert.strictEqual((yield* videos.pollDue).claimed, 1)
          assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: wait, failures })
          yield* TestClock.adjust(wait - 1)
          assert.strictEqual((yield* videos.pollDue).claimed, 0, `polled before the ${wait} ms back-off`)
          yield* TestClock.adjust(1)
        }
        // The upstream answers again: back to the poll interval, failures forgotten.
        assert.strictEqual((yield* videos.pollDue).claimed, 1)
        assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: 100, failures: 0 })
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.strictEqual(row.status, "in_progress")
        assert.strictEqual(row.hold_status, "pending")
      }).pipe(Effect.ensuring(Effect.sync(() => sim.clearFaults())), Effect.provide(services())),
    SLOW
  )

  it.effect(
    "one 404 while polling does not fail the task: it completes and is billed once",
    () =>
      Effect.gen(function* () {
        const { videos, key, task } = yield* dispatched("a clip the vendor briefly loses sight of")
        // The upstream answers the next poll 404 (a replica that has not seen the task yet), then knows it again.
        sim.setFaults({ status: 404 }, 1)
        yield* TestClock.adjust("100 millis")
        const report = yield* videos.pollDue
        assert.deepStrictEqual([report.claimed, report.failed], [1, 0])
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.notStrictEqual(row.status, "failed", JSON.stringify(row))
        assert.strictEqual(row.hold_status, "pending")
        // Counted as a failure: polled again after the back-off.
        assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: 100, failures: 1 })
        assert.strictEqual(yield* missingPollsOf(task.taskId), 1)
        yield* pollUntil(() => Effect.map(videos.get(key.accountId, task.taskId), (r) => r.status === "completed"))
        const done = yield* videos.get(key.accountId, task.taskId)
        assert.deepStrictEqual([done.hold_status, done.captured, done.refunded], ["settled", "56833", "0"])
        assert.deepStrictEqual(
          (yield* ledgerOf(key.accountId)).map(([type]) => type),
          ["HoldPlaced", "UsageRecalculated"]
        )
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "56833", held: "0" })
        assert.strictEqual((yield* videos.pollDue).claimed, 0)
      }).pipe(Effect.ensuring(Effect.sync(() => sim.clearFaults())), Effect.provide(services())),
    SLOW
  )

  it.effect(
    "404s on every poll fail the task after a few retries with a full refund; a good poll in between resets the count",
    () =>
      Effect.gen(function* () {
        const { videos, key, task } = yield* dispatched("a render the vendor lost [sim:video-stall]")
        // One 404, then an answer about the task: the count starts again.
        sim.setFaults({ status: 404 }, 1)
        yield* TestClock.adjust("100 millis")
        yield* videos.pollDue
        assert.strictEqual((yield* videos.get(key.accountId, task.taskId)).hold_status, "pending")
        assert.strictEqual(yield* missingPollsOf(task.taskId), 1)
        yield* TestClock.adjust("100 millis")
        yield* videos.pollDue
        assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: 100, failures: 0 })
        assert.strictEqual(yield* missingPollsOf(task.taskId), 0)
        // From now on the upstream answers 404 to every poll: polled again on the failure back-off, then failed.
        sim.setFaults({ status: 404 })
        let wait = 100
        for (let polls = 1; polls < MISSING_POLLS_BEFORE_FAILING; polls++) {
          yield* TestClock.adjust(wait)
          const report = yield* videos.pollDue
          assert.deepStrictEqual([report.claimed, report.failed], [1, 0], `404 number ${polls}`)
          assert.strictEqual((yield* videos.get(key.accountId, task.taskId)).hold_status, "pending")
          assert.deepStrictEqual(yield* leaseOf(task.taskId), { dueInMs: wait, failures: polls })
          assert.strictEqual(yield* missingPollsOf(task.taskId), polls)
          wait *= 2
        }
        yield* TestClock.adjust(wait)
        assert.strictEqual((yield* videos.pollDue).failed, 1)
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.strictEqual(row.status, "failed")
        assert.strictEqual(row.error_code, "upstream_task_missing")
        assert.deepStrictEqual([row.hold_status, row.captured, row.refunded], ["released", "0", "56833"])
        assert.deepStrictEqual(yield* ledgerOf(key.accountId), [
          ["HoldPlaced", "0.056833", null],
          ["RefundIssued", "0.056833", "expired"]
        ])
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "0", held: "0" })
        assert.strictEqual((yield* videos.pollDue).claimed, 0)
      }).pipe(Effect.ensuring(Effect.sync(() => sim.clearFaults())), Effect.provide(services())),
    SLOW
  )

  it.effect(
    "a task dispatched before the upstream's name was recorded is still claimed, by its model, and completes",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("dispatched by an older gateway"),
          idempotencyKey: null,
          requestId: null
        })
        yield* videos.pollDue // creates the upstream task
        const sql = yield* SqlClient.SqlClient
        const [dispatched] = yield* sql<{ upstream_name: string | null }>`
          SELECT upstream_name FROM video_tasks WHERE id = ${task.taskId}`
        assert.strictEqual(dispatched.upstream_name, "sim-ark")
        // As an older gateway recorded it: no upstream name in the event or the row.
        yield* sql`UPDATE events SET data = data - 'upstreamName'
          WHERE stream_name = ${`video-${task.taskId}`} AND event_type = 'VideoTaskDispatched'`
        yield* sql`UPDATE video_tasks SET upstream_name = NULL WHERE id = ${task.taskId}`
        yield* pollUntil(() => Effect.map(videos.get(key.accountId, task.taskId), (r) => r.status === "completed"))
        const [row] = yield* sql<{ upstream_name: string | null; upstream_index: number }>`
          SELECT upstream_name, upstream_index FROM video_tasks WHERE id = ${task.taskId}`
        assert.deepStrictEqual(row, { upstream_name: null, upstream_index: 0 })
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "56833", held: "0" })
      }).pipe(Effect.provide(services())),
    SLOW
  )

  it.effect(
    "the ledger's expired-hold sweep leaves a live task's hold alone: the task's deadline governs it",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const ledger = yield* Ledger
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("a slow render [sim:video-stall]"),
          idempotencyKey: null,
          requestId: null
        })
        yield* pollUntil(() =>
          Effect.map(videos.get(key.accountId, task.taskId), (row) => row.status === "in_progress")
        )
        // Nearly twice the default request-hold TTL (900 s), still inside the 30-minute task deadline.
        yield* TestClock.adjust("29 minutes")
        assert.strictEqual(yield* ledger.sweepExpiredHolds, 0)
        const sql = yield* SqlClient.SqlClient
        const [hold] = yield* sql<{ status: string; expires_at: Date | null }>`
        SELECT status, expires_at FROM holds WHERE hold_id = ${task.holdId}::uuid`
        assert.deepStrictEqual(hold, { status: "pending", expires_at: null })
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "0", held: "56833" })
        yield* videos.pollDue
        assert.strictEqual((yield* videos.get(key.accountId, task.taskId)).status, "in_progress")
        assert.deepStrictEqual(yield* ledgerOf(key.accountId), [["HoldPlaced", "0.056833", null]])
      }).pipe(Effect.provide(services())),
    SLOW
  )

  it.effect(
    "an upstream that reports the task expired: the whole hold is refunded, once",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("too late [sim:video-expire]"),
          idempotencyKey: null,
          requestId: null
        })
        yield* pollUntil(() => Effect.map(videos.get(key.accountId, task.taskId), (row) => row.status === "failed"))
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.strictEqual(row.error_code, "TaskExpired")
        assert.deepStrictEqual([row.hold_status, row.captured, row.refunded], ["released", "0", "56833"])
        assert.deepStrictEqual(yield* ledgerOf(key.accountId), [
          ["HoldPlaced", "0.056833", null],
          ["RefundIssued", "0.056833", "expired"]
        ])
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "0", held: "0" })
        assert.strictEqual((yield* videos.pollDue).claimed, 0)
      }).pipe(Effect.provide(services())),
    SLOW
  )

  it.effect(
    "an upstream that reports the task cancelled: the whole hold is refunded, once",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("cancelled by the vendor"),
          idempotencyKey: null,
          requestId: null
        })
        yield* videos.pollDue // creates the upstream task, queued there for 2 s
        const sql = yield* SqlClient.SqlClient
        const [{ upstream_task_id }] = yield* sql<{ upstream_task_id: string }>`
        SELECT upstream_task_id FROM video_tasks WHERE id = ${task.taskId}`
        // Cancelled upstream behind the gateway's back (an operator in the vendor's console).
        const cancelled = yield* Effect.promise(() =>
          fetch(`${slowSim.baseUrl}/api/v3/contents/generations/tasks/${upstream_task_id}`, {
            method: "DELETE",
            headers: { authorization: `Bearer ${slowSim.apiKey}` }
          })
        )
        assert.strictEqual(cancelled.status, 200)
        yield* pollUntil(() => Effect.map(videos.get(key.accountId, task.taskId), (row) => row.status === "failed"))
        const row = yield* videos.get(key.accountId, task.taskId)
        assert.deepStrictEqual([row.hold_status, row.captured, row.refunded], ["released", "0", "56833"])
        assert.deepStrictEqual(yield* ledgerOf(key.accountId), [
          ["HoldPlaced", "0.056833", null],
          ["RefundIssued", "0.056833", "cancelled"]
        ])
        assert.deepStrictEqual(yield* accountRow(key.accountId), { captured: "0", held: "0" })
      }).pipe(Effect.provide(services(undefined, slowConfigPath))),
    SLOW
  )
  it.effect(
    "a create that outlasts its lease: the other worker's dispatch wins and the loser cancels its orphan upstream",
    () =>
      Effect.gen(function* () {
        const videos = yield* VideoTasks
        // A second gateway instance on the same database: its own worker id, the same store, ledger and upstreams.
        const other = Context.get(
          yield* Layer.build(
            VideoTasks.layerWith({ ...defaultVideoWorkerOptions, enabled: false }).pipe(
              Layer.provide(PgVideoTasks.layer)
            )
          ),
          VideoTasks
        )
        const key = yield* customer
        const { task } = yield* videos.submit({
          key,
          model: FAST,
          request: request("two workers, one video"),
          idempotencyKey: null,
          requestId: null
        })
        slowSim.clearCalls()
        const creates = () => slowSim.calls().filter((c) => c.method === "POST" && c.path.endsWith("/tasks"))
        // The first worker's create hangs upstream for 1.5 s (real time)...
        slowSim.setFaults({ latencyMs: 1_500 }, 1)
        const first = yield* Effect.forkChild(videos.pollDue)
        for (let i = 0; i < 100 && creates().length === 0; i++) yield* realSleep(20)
        assert.strictEqual(creates().length, 1)
        // ...past the lease it took for the create (lease + every upstream's timeout: 30 s + 20 s). The worker renews
        // its lease while it waits; the renewals are undone here, as if they had not reached the database (a network
        // partition, a long pause), so the other instance may claim the task, and creates and records its own
        // upstream task first.
        yield* TestClock.adjust("51 seconds")
        yield* realSleep(200)
        const sql = yield* SqlClient.SqlClient
        const now = new Date(yield* Clock.currentTimeMillis)
        yield* sql`UPDATE video_task_leases SET lease_until = ${now} WHERE task_id = ${task.taskId}`
        assert.strictEqual((yield* other.pollDue).claimed, 1)
        const [{ upstream_task_id: winner }] = yield* sql<{ upstream_task_id: string }>`
          SELECT upstream_task_id FROM video_tasks WHERE id = ${task.taskId}`
        yield* Fiber.join(first)
        assert.strictEqual(creates().length, 2)
        // The first worker's dispatch lost (conditional on the stream version): the task keeps the winner's upstream
        // task and the loser deleted its own, which the upstream now reports cancelled.
        const [{ upstream_task_id: kept }] = yield* sql<{ upstream_task_id: string }>`
          SELECT upstream_task_id FROM video_tasks WHERE id = ${task.taskId}`
        assert.strictEqual(kept, winner)
        const deletes = slowSim.calls().filter((c) => c.method === "DELETE")
        assert.strictEqual(deletes.length, 1)
        const orphan = deletes[0].path.split("/").at(-1) as string
        assert.notStrictEqual(orphan, winner)
        const orphanState = yield* Effect.promise(() =>
          fetch(`${slowSim.baseUrl}/api/v3/contents/generations/tasks/${orphan}`, {
            headers: { authorization: `Bearer ${slowSim.apiKey}` }
          }).then((r) => r.json())
        )
        assert.strictEqual(orphanState.status, "cancelled")
        const events = yield* sql<{ event_type: string }>`
          SELECT event_type FROM events WHERE stream_name = ${`video-${task.taskId}`} ORDER BY stream_position`
        assert.deepStrictEqual(
          events.map((e) => e.event_type),
          ["VideoTaskSubmitted", "VideoTaskDispatched"]
        )
        assert.deepStrictEqual(yield* ledgerOf(key.accountId), [["HoldPlaced", "0.056833", null]])
      }).pipe(
        Effect.scoped,
        Effect.ensuring(Effect.sync(() => slowSim.clearFaults())),
        Effect.provide(services(undefined, slowConfigPath))
      ),
    SLOW
  )
})
