/**
 * `kill -9` of the gateway process on a real Postgres: during 64 concurrent streamed requests, during long streams,
 * and while a video task is being generated. After a restart on the same database, every hold the dead process left
 * open is resolved by the expiry sweep exactly once (a long stream settled at the progress its lease last recorded),
 * the video task resumes and settles exactly once, nothing is charged twice or lost, and `replay --verify` and the
 * audit are clean. A batch killed mid-run resumes on the new process (its lease is 2 s here) and completes with each
 * line held once, settled once and in the output once, the ledger agreeing with the output line by line.
 * The gateway runs as a child process (the bundle `npm start` runs, test/support/ChildGateway.ts),
 * so SIGKILL gives it no chance to clean up.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { freePort } from "../support/Ports.ts"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../../src/adapters/tokenizer/Tokenizer.ts"
import { createPostgresDatabase, runPostgres } from "../support/TestDatabase.ts"
import {
  childEnv,
  admin,
  assertEachHoldResolvedOnce,
  type Gateway,
  killHard,
  ledgerOf,
  sleep,
  startGateway,
  untilNothingHeld,
  untilSomethingHeld
} from "../support/ChildGateway.ts"
import { recordStream } from "../support/Sse.ts"
import { assertLineByLine, outputOf, submitChatBatch, untilCompleted, untilEnded } from "../http/batches/BatchChecks.ts"

const baseUrl = process.env.TEST_DATABASE_URL
const VIDEO = "video-model-2.0-fast"

describe.skipIf(baseUrl === undefined || baseUrl === "")("kill -9 of the gateway", () => {
  let sim: RunningSimulator
  let longSim: RunningSimulator
  let slowSim: RunningSimulator
  let database: { readonly url: string; drop(): Promise<void> }
  let dir: string
  let env: Record<string, string>
  let port: number
  let gateway: Gateway | undefined

  beforeAll(async () => {
    // Streams of ~40 events 60 ms apart (a few seconds), and video tasks that take 4 s upstream.
    sim = await startSimulator({ faults: { chunkDelayMs: 60 }, replyTokens: 40, videoMillis: 4_000 })
    // Long streams: 2,000 tokens, a few per event, 40 ms apart (about 20 s).
    longSim = await startSimulator({ faults: { chunkDelayMs: 40 }, replyTokens: 2_000 })
    // Batch lines: 300 ms each upstream, so some are always in flight.
    slowSim = await startSimulator({ faults: { latencyMs: 300 } })
    database = await createPostgresDatabase(baseUrl as string)
    dir = mkdtempSync(join(tmpdir(), "tollgate-kill-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(
      configPath,
      `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-ark: { protocol: ark, baseUrl: "${sim.baseUrl}/api/v3", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  long: { protocol: openai, baseUrl: "${longSim.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  slow: { protocol: openai, baseUrl: "${slowSim.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: sim-long, plugin: text, upstreams: [long], upstreamModel: sim-openai, pricing: { input: "1.00", output: "10.00" }, maxOutputTokens: 4000 }
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-slow, plugin: text, upstreams: [slow], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: ${VIDEO}, plugin: video, upstreams: [sim-ark], upstreamModel: seedance-2-0-fast, pricing: { output: "1.40" } }
ledger: { holdTtlSeconds: 2 }
video: { pollIntervalMs: 200, deadlineMinutes: 30, retentionDays: 7 }
batches: { leaseSeconds: 2 }
`
    )
    port = await freePort()
    env = childEnv(database.url, configPath, dir)
  }, 60_000)

  afterAll(async () => {
    if (gateway !== undefined && gateway.child.exitCode === null && gateway.child.signalCode === null) {
      await killHard(gateway)
    }
    await sim?.close()
    await longSim?.close()
    await slowSim?.close()
    await database?.drop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("during 64 streamed requests: holds released once after restart, nothing lost", { timeout: 180_000 }, async () => {
    gateway = await startGateway(env, port)
    const account = await admin(gateway, "POST", "/admin/accounts", { name: "kill-streams" })
    await admin(gateway, "POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "50", reference: "k-1" })
    const key = (await admin(gateway, "POST", `/admin/accounts/${account.body.id}/keys`, { name: "k" })).body.key
    const live = gateway
    const started = Array.from({ length: 64 }, () =>
      fetch(`${live.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "sim-openai",
          stream: true,
          max_tokens: 40,
          messages: [{ role: "user", content: "Tell me a story" }]
        })
      }).then(async (response) => {
        // Read the first event so the request is in flight upstream, then keep the stream open.
        const reader = response.body?.getReader()
        await reader?.read()
        return reader
      })
    )
    const readers = await Promise.all(started)
    await killHard(gateway)
    for (const reader of readers) await reader?.read().catch(() => undefined)

    gateway = await startGateway(env, port)
    // The dead process's holds expire after 2 s (their leases soon after); the sweep (every 15 s) resolves them.
    const balance = await untilNothingHeld(gateway, account.body.id)
    assert.strictEqual(balance.held, "0.000000")
    const entries = await ledgerOf(gateway, account.body.id)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 64)
    // A stream that had delivered output when its lease last recorded it is settled at that; the others cost nothing.
    const settled = entries.filter((e) => e.type === "UsageRecalculated")
    const captured = settled.reduce((sum, e) => sum + Math.round(Number(e.amount) * 1e6), 0)
    assert.strictEqual(Math.round(Number(balance.captured) * 1e6), captured)
    assert.strictEqual(balance.deposited, "50.000000")
    const replay = await admin(gateway, "POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    const audit = await admin(gateway, "POST", "/admin/audit/verify")
    assert.isTrue(audit.body.ok, JSON.stringify(audit.body.firstBroken))
    await killHard(gateway)
  })

  it("long streams: what each delivered before the kill is billed after restart, but for its last lease renewals", {
    timeout: 180_000
  }, async () => {
    gateway = await startGateway(env, port)
    const account = await admin(gateway, "POST", "/admin/accounts", { name: "kill-long-streams" })
    await admin(gateway, "POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "50", reference: "l-1" })
    const key = (await admin(gateway, "POST", `/admin/accounts/${account.body.id}/keys`, { name: "l" })).body.key
    const live = gateway
    const delivered = new Map<string, string>()
    const began = Date.now()
    const readers = Array.from({ length: 8 }, () => recordStream(live.url, key, "sim-long", delivered))
    await sleep(4_000)
    await killHard(gateway)
    const seconds = (Date.now() - began) / 1000
    await Promise.all(readers)

    gateway = await startGateway(env, port)
    const balance = await untilNothingHeld(gateway, account.body.id)
    assert.strictEqual(balance.held, "0.000000")
    const rows = (await runPostgres(
      database.url,
      `SELECT h.request_id, h.status, (e.data->'usage'->>'outputTokens')::int AS billed, e.data->'usage' AS usage
       FROM holds h LEFT JOIN events e ON e.event_type = 'UsageRecalculated' AND e.data->>'holdId' = h.hold_id::text
       WHERE h.model = 'sim-long'`
    )) as unknown as ReadonlyArray<{ request_id: string; status: string; billed: number | null; usage: unknown }>
    assert.strictEqual(rows.length, 8)
    // This config renews leases every 250 ms (an eighth of its 2 s hold TTL): a stream's last recorded progress is
    // at most two renewals old when the process dies. Allow three, and the events in flight on the socket.
    const renewal = 0.25
    for (const row of rows) {
      const tokens = countText(delivered.get(row.request_id) ?? "")
      const rate = tokens / seconds
      assert.isAbove(tokens, 50, "the stream had delivered something before the kill")
      assert.strictEqual(row.status, "settled", JSON.stringify(row))
      assert.isAtLeast(row.billed ?? 0, tokens - Math.ceil(rate * 3 * renewal), JSON.stringify({ tokens, row }))
      assert.isAtMost(row.billed ?? 0, tokens + Math.ceil(rate * renewal) + 5, JSON.stringify({ tokens, row }))
      assert.deepInclude(row.usage as object, { estimated: true, recovered: true })
    }
    const entries = await ledgerOf(gateway, account.body.id)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 8)
    const replay = await admin(gateway, "POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    await killHard(gateway)
  })

  it("two instances, one killed under load: the other finishes every video task, none settled twice", {
    timeout: 180_000
  }, async () => {
    const first = await startGateway(env, port)
    const second = await startGateway(env, await freePort())
    gateway = first
    try {
      const account = await admin(first, "POST", "/admin/accounts", { name: "two-instances" })
      await admin(first, "POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "20", reference: "t-1" })
      const key = (await admin(first, "POST", `/admin/accounts/${account.body.id}/keys`, { name: "t" })).body.key
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
      // Eight tasks, submitted to both instances; both workers poll them under leases.
      const ids: Array<string> = []
      for (let i = 0; i < 8; i++) {
        const target = i % 2 === 0 ? first : second
        const task = await fetch(`${target.url}/v1/videos`, {
          method: "POST",
          headers,
          body: JSON.stringify({ model: VIDEO, prompt: `clip ${i}`, seconds: "4", metadata: { resolution: "480p" } })
        }).then((r) => r.json())
        ids.push(task.id)
      }
      // Chat load on the instance that will die, while the tasks run.
      const chats = Array.from({ length: 16 }, () =>
        fetch(`${first.url}/v1/chat/completions`, {
          method: "POST",
          headers,
          body: JSON.stringify({ model: "sim-openai", max_tokens: 20, messages: [{ role: "user", content: "Hi" }] })
        }).then(
          (r) => r.text(),
          () => ""
        )
      )
      await sleep(1_500)
      await killHard(first)
      await Promise.all(chats)
      gateway = second
      const statuses = new Map<string, string>()
      for (let i = 0; i < 900 && [...statuses.values()].filter((s) => s === "completed").length < ids.length; i++) {
        for (const id of ids) {
          const task = await fetch(`${second.url}/v1/videos/${id}`, { headers }).then((r) => r.json())
          statuses.set(id, task.status)
        }
        await sleep(100)
      }
      assert.deepStrictEqual(
        [...statuses.values()],
        ids.map(() => "completed")
      )
      assert.strictEqual((await untilNothingHeld(second, account.body.id)).held, "0.000000")
      const entries = await ledgerOf(second, account.body.id)
      assertEachHoldResolvedOnce(entries)
      const videoHolds = entries.filter((e) => e.type === "HoldPlaced" && e.model === VIDEO)
      assert.strictEqual(videoHolds.length, 8)
      for (const hold of videoHolds) {
        assert.strictEqual(entries.filter((e) => e.holdId === hold.holdId && e.type === "UsageRecalculated").length, 1)
      }
      const replay = await admin(second, "POST", "/admin/replay")
      assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    } finally {
      await killHard(first)
      await killHard(second)
    }
  })

  it("during video generation: the task resumes after restart and settles once", { timeout: 180_000 }, async () => {
    gateway = await startGateway(env, port)
    const account = await admin(gateway, "POST", "/admin/accounts", { name: "kill-video" })
    await admin(gateway, "POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "5", reference: "v-1" })
    const key = (await admin(gateway, "POST", `/admin/accounts/${account.body.id}/keys`, { name: "v" })).body.key
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" }
    const submitted = await fetch(`${gateway.url}/v1/videos`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: VIDEO, prompt: "a fox in snow", seconds: "4", metadata: { resolution: "480p" } })
    }).then((r) => r.json())
    // Kill once the worker has dispatched the task upstream and reported progress.
    let task = submitted
    for (let i = 0; i < 200 && !(task.status === "in_progress" && task.progress > 0); i++) {
      await sleep(50)
      task = await fetch(`${gateway.url}/v1/videos/${submitted.id}`, { headers }).then((r) => r.json())
    }
    assert.strictEqual(task.status, "in_progress")
    await killHard(gateway)

    gateway = await startGateway(env, port)
    for (let i = 0; i < 600 && task.status !== "completed" && task.status !== "failed"; i++) {
      await sleep(100)
      task = await fetch(`${gateway.url}/v1/videos/${submitted.id}`, { headers }).then((r) => r.json())
    }
    assert.strictEqual(task.status, "completed", JSON.stringify(task))
    const content = await fetch(`${gateway.url}/v1/videos/${submitted.id}/content`, { headers })
    assert.strictEqual(content.status, 200)
    assert.isAbove((await content.arrayBuffer()).byteLength, 1000)
    const entries = await ledgerOf(gateway, account.body.id)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 1)
    assert.strictEqual(entries.filter((e) => e.type === "UsageRecalculated").length, 1)
    const balance = await admin(gateway, "GET", `/admin/accounts/${account.body.id}`)
    assert.strictEqual(balance.body.balance.held, "0.000000")
    const replay = await admin(gateway, "POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    await killHard(gateway)
  })
  it("mid-batch: the new process finishes the batch, each line held, billed and written once", {
    timeout: 90_000
  }, async () => {
    gateway = await startGateway(env, port)
    const account = await admin(gateway, "POST", "/admin/accounts", { name: "kill-batch" })
    await admin(gateway, "POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "10", reference: "b-1" })
    const key = (await admin(gateway, "POST", `/admin/accounts/${account.body.id}/keys`, { name: "b" })).body.key
    const { batchId, customIds } = await submitChatBatch(gateway.url, key, "sim-slow", 40)
    await untilCompleted(gateway.url, key, batchId, 6, 30_000)
    // Lines are held and in flight upstream when the process dies. Between two of the chunk's lines nothing may be
    // held for a moment (the next line's hold is not committed yet): the balance is read until a line is.
    const before = await untilSomethingHeld(gateway, account.body.id)
    await killHard(gateway)
    assert.notStrictEqual(before.held, "0.000000")

    gateway = await startGateway(env, port)
    const began = Date.now()
    const batch = await untilEnded(gateway.url, key, batchId, 40_000)
    console.info(`batch kill -9: completed ${Date.now() - began} ms after the new process was ready`)
    assert.strictEqual(batch?.status, "completed")
    assert.deepStrictEqual(batch?.request_counts, { total: 40, completed: 40, failed: 0 })
    const output = await outputOf(gateway.url, key, batch.output_file_id)
    const entries = await ledgerOf(gateway, account.body.id)
    assertLineByLine(output, customIds, entries, { input: 75_000n, output: 300_000n })
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 40)
    assert.strictEqual((await untilNothingHeld(gateway, account.body.id, 5)).held, "0.000000")
    const replay = await admin(gateway, "POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    const audit = await admin(gateway, "POST", "/admin/audit/verify")
    assert.isTrue(audit.body.ok, JSON.stringify(audit.body.firstBroken))
    await killHard(gateway)
  })
})
