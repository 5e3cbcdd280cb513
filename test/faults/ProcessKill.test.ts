/**
 * `kill -9` of the gateway process on a real Postgres: during 64 concurrent streamed requests, and while a video task
 * is being generated. After a restart on the same database, every hold the dead process left open is released by the
 * expiry sweep exactly once, the video task resumes and settles exactly once, nothing is charged twice or lost, and
 * `replay --verify` and the audit are clean. The gateway runs as a child process (`node --import tsx src/main.ts`),
 * so SIGKILL gives it no chance to clean up.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { freePort } from "../support/Ports.ts"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { createPostgresDatabase } from "../support/TestDatabase.ts"

const baseUrl = process.env.TEST_DATABASE_URL
const ADMIN_TOKEN = "tga_kill_test_0123456789abcdef0123456789abcdef"
const VIDEO = "video-model-2.0-fast"

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Gateway {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
}

const startGateway = async (env: Record<string, string>, port: number): Promise<Gateway> => {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}):\n${output}`)
    // A connection to a port nobody listens on yet can hang here instead of being refused: bound each probe.
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(500) }).then(
      (r) => r.status === 200,
      () => false
    )
    if (ready) return { url, child, output: () => output }
    await sleep(100)
  }
  child.kill("SIGKILL")
  throw new Error(`the gateway did not become ready:\n${output}`)
}

const SECRET = /sk-[A-Za-z0-9]{40,}|tga_[A-Za-z0-9_]{30,}/

/** Kills the process; its whole output (logs of a run cut short included) must not carry a key or a token. */
const killHard = (gateway: Gateway) =>
  new Promise<void>((resolve) => {
    assert.notMatch(gateway.output(), SECRET, "a secret in the gateway's output")
    if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return resolve()
    gateway.child.once("exit", () => resolve())
    gateway.child.kill("SIGKILL")
  })

const admin = async (gateway: Gateway, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text.length > 0 ? JSON.parse(text) : null }
}

interface Entry {
  readonly type: string
  readonly holdId: string | null
  readonly amount: string | null
  readonly model: string | null
}

const ledgerOf = async (gateway: Gateway, accountId: string): Promise<ReadonlyArray<Entry>> => {
  const entries: Array<Entry> = []
  let after = 0
  for (;;) {
    const page = await admin(gateway, "GET", `/admin/accounts/${accountId}/ledger?after=${after}&limit=1000`)
    entries.push(...page.body.data)
    if (page.body.next === null) return entries
    after = page.body.next
  }
}

/** Every hold resolved exactly once: one UsageRecalculated or one full-release RefundIssued, never both or two. */
const assertEachHoldResolvedOnce = (entries: ReadonlyArray<Entry>) => {
  const holds = entries.filter((e) => e.type === "HoldPlaced")
  for (const hold of holds) {
    const usage = entries.filter((e) => e.holdId === hold.holdId && e.type === "UsageRecalculated").length
    const refunds = entries.filter((e) => e.holdId === hold.holdId && e.type === "RefundIssued").length
    assert.isAtMost(usage, 1, `hold ${hold.holdId} recalculated ${usage} times`)
    assert.isTrue(usage === 1 || refunds === 1, `hold ${hold.holdId}: ${usage} usage, ${refunds} refunds`)
    assert.isAtMost(refunds, 1, `hold ${hold.holdId} refunded ${refunds} times`)
  }
  return holds.length
}

describe.skipIf(baseUrl === undefined || baseUrl === "")("kill -9 of the gateway", () => {
  let sim: RunningSimulator
  let database: { readonly url: string; drop(): Promise<void> }
  let dir: string
  let env: Record<string, string>
  let port: number
  let gateway: Gateway | undefined

  beforeAll(async () => {
    // Streams of ~40 events 60 ms apart (a few seconds), and video tasks that take 4 s upstream.
    sim = await startSimulator({ faults: { chunkDelayMs: 60 }, replyTokens: 40, videoMillis: 4_000 })
    database = await createPostgresDatabase(baseUrl as string)
    dir = mkdtempSync(join(tmpdir(), "tollgate-kill-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(
      configPath,
      `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  sim-ark: { protocol: ark, baseUrl: "${sim.baseUrl}/api/v3", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: ${VIDEO}, plugin: video, upstreams: [sim-ark], upstreamModel: seedance-2-0-fast, pricing: { output: "1.40" } }
ledger: { holdTtlSeconds: 2 }
video: { pollIntervalMs: 200, deadlineMinutes: 30, retentionDays: 7 }
`
    )
    port = await freePort()
    env = {
      DATABASE_URL: database.url,
      TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
      TOLLGATE_CONFIG: configPath,
      TOLLGATE_DATA_DIR: join(dir, "data"),
      TOLLGATE_CONTENT_DIR: join(dir, "content")
    }
  }, 60_000)

  afterAll(async () => {
    if (gateway !== undefined && gateway.child.exitCode === null && gateway.child.signalCode === null) {
      await killHard(gateway)
    }
    await sim?.close()
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
    // The dead process's holds expire after 2 s; the ledger's sweep (every 15 s) releases them.
    let balance = await admin(gateway, "GET", `/admin/accounts/${account.body.id}`)
    for (let i = 0; i < 400 && balance.body.balance.held !== "0.000000"; i++) {
      await sleep(100)
      balance = await admin(gateway, "GET", `/admin/accounts/${account.body.id}`)
    }
    assert.strictEqual(balance.body.balance.held, "0.000000")
    const entries = await ledgerOf(gateway, account.body.id)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 64)
    const expired = entries.filter((e) => e.type === "RefundIssued").length
    const settled = entries.filter((e) => e.type === "UsageRecalculated").length
    assert.strictEqual(expired + settled, 64)
    // Nothing captured for a request that never finished; the deposit is intact but for what was settled.
    assert.strictEqual(balance.body.balance.deposited, "50.000000")
    const replay = await admin(gateway, "POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    const audit = await admin(gateway, "POST", "/admin/audit/verify")
    assert.isTrue(audit.body.ok, JSON.stringify(audit.body.firstBroken))
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
      let balance = await admin(second, "GET", `/admin/accounts/${account.body.id}`)
      for (let i = 0; i < 400 && balance.body.balance.held !== "0.000000"; i++) {
        await sleep(100)
        balance = await admin(second, "GET", `/admin/accounts/${account.body.id}`)
      }
      assert.strictEqual(balance.body.balance.held, "0.000000")
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
})
