/**
 * A delivered response is billed, whatever happens to the database or the process after it was delivered:
 * - a call that outlives its hold's TTL keeps its hold (its lease is renewed) and is answered and billed, not 409;
 * - streams that end while the database is away are billed when it is back, their holds held meanwhile;
 * - and when the process is killed before the database came back, the next process bills them from its journal.
 * The last two need a real Postgres behind a TCP proxy that can drop it (test/support/Outage.ts).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { JOURNAL_FILE } from "../../src/adapters/journal/FileSettlementJournal.ts"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import {
  childEnv,
  ADMIN_TOKEN,
  admin,
  killHard,
  ledgerOf,
  readDeltas,
  sleep,
  startGateway,
  untilNothingHeld
} from "../support/ChildGateway.ts"
import { type Outage, outageBefore } from "../support/Outage.ts"
import { freePort } from "../support/Ports.ts"
import { createPostgresDatabase, runPostgres } from "../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const baseUrl = process.env.TEST_DATABASE_URL

const config = (sim: RunningSimulator, ttlSeconds: number) => `
upstreams:
  sim: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "${sim.apiKey}", timeoutMs: 20000 }
models:
  - { id: sim-model, plugin: text, upstreams: [sim], upstreamModel: sim-openai, pricing: { input: "1.00", output: "10.00" }, maxOutputTokens: 2000 }
ledger: { holdTtlSeconds: ${ttlSeconds} }
`

const fundedKey = async (gateway: { readonly url: string }, token: string) => {
  const call = (path: string, body: unknown) => admin(gateway, "POST", path, body, token)
  const accountId = String((await call("/admin/accounts", { name: "settlement" })).body.id)
  await call(`/admin/accounts/${accountId}/deposits`, { amount: "20", reference: "s-1" })
  const key = String((await call(`/admin/accounts/${accountId}/keys`, { name: "s" })).body.key)
  return { accountId, key }
}

const chat = (url: string, key: string, stream: boolean) =>
  fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "sim-model",
      stream,
      max_tokens: 1000,
      messages: [{ role: "user", content: "Tell me a story" }]
    })
  })

describe("a call that outlives its hold's TTL", () => {
  let slow: RunningSimulator
  let gateway: TestGateway
  let dir: string

  beforeAll(async () => {
    // Every answer starts after 3 s; holds live 1 s unless renewed, and the sweep runs every 200 ms.
    slow = await startSimulator({ faults: { latencyMs: 3_000 } })
    dir = mkdtempSync(join(tmpdir(), "tollgate-settlement-"))
    writeFileSync(join(dir, "tollgate.yaml"), config(slow, 1))
    gateway = await startTestGateway({ configPath: join(dir, "tollgate.yaml"), ledger: { sweepIntervalMillis: 200 } })
  }, 60_000)

  afterAll(async () => {
    await gateway?.close()
    await slow?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("is answered 200 and billed: its hold is renewed while it runs, never swept", async () => {
    const { accountId, key } = await fundedKey(gateway, gateway.adminToken)
    await sleep(1_000) // past the sweep's wait after start
    const response = await chat(gateway.url, key, false)
    assert.strictEqual(response.status, 200, await response.clone().text())
    const body = (await response.json()) as { usage: { completion_tokens: number } }
    assert.isAbove(body.usage.completion_tokens, 0)
    const balance = await untilNothingHeld(gateway, accountId, 10, gateway.adminToken)
    assert.notStrictEqual(balance.captured, "0.000000")
    const ledger = await ledgerOf(gateway, accountId, gateway.adminToken)
    assert.deepStrictEqual(
      ledger.map((e) => e.type),
      ["AccountOpened", "FundsDeposited", "HoldPlaced", "UsageRecalculated", "RefundIssued"]
    )
  }, 30_000)
})

describe.skipIf(baseUrl === undefined || baseUrl === "")("settlements through a database outage", () => {
  let sim: RunningSimulator
  let database: { readonly url: string; drop(): Promise<void> }
  let outage: Outage
  let proxied: string
  let dir: string

  beforeAll(async () => {
    // Streams of 150 tokens, a few per event, 40 ms apart: a second or two each.
    sim = await startSimulator({ faults: { chunkDelayMs: 40 }, replyTokens: 150 })
    database = await createPostgresDatabase(baseUrl as string)
    const behind = await outageBefore(database.url, await freePort())
    outage = behind.outage
    proxied = behind.url
    dir = mkdtempSync(join(tmpdir(), "tollgate-settlement-pg-"))
    writeFileSync(join(dir, "tollgate.yaml"), config(sim, 2))
  }, 60_000)

  afterAll(async () => {
    await outage?.down()
    await sim?.close()
    await database?.drop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const holdStatuses = async (accountId: string) =>
    (await runPostgres(
      database.url,
      `SELECT h.status, h.captured::text AS captured, r.data->>'reason' AS reason FROM holds h
       LEFT JOIN events r ON r.event_type = 'RefundIssued' AND r.data->>'holdId' = h.hold_id::text
       WHERE h.account_id = '${accountId}'`
    )) as unknown as ReadonlyArray<{ status: string; captured: string; reason: string | null }>

  it("streams that end while the database is away are billed when it is back, their holds held meanwhile", async () => {
    const gateway = await startTestGateway({
      database: { kind: "postgres", url: Redacted.make(proxied) },
      configPath: join(dir, "tollgate.yaml"),
      ledger: { sweepIntervalMillis: 200 }
    })
    try {
      const { accountId, key } = await fundedKey(gateway, gateway.adminToken)
      const responses = await Promise.all(Array.from({ length: 6 }, () => chat(gateway.url, key, true)))
      assert.deepStrictEqual(
        responses.map((r) => r.status),
        responses.map(() => 200)
      )
      await outage.down()
      const finished = await Promise.all(responses.map((r) => readDeltas(r, () => undefined)))
      assert.deepStrictEqual(finished, [true, true, true, true, true, true], "every stream ended with [DONE]")
      await sleep(2_500) // longer than the holds' TTL
      await outage.up()
      const balance = await untilNothingHeld(gateway, accountId, 30, gateway.adminToken)
      assert.strictEqual(balance.held, "0.000000")
      const holds = await holdStatuses(accountId)
      assert.strictEqual(holds.length, 6)
      for (const hold of holds) {
        assert.strictEqual(hold.status, "settled", JSON.stringify(hold))
        assert.notStrictEqual(hold.captured, "0")
      }
      assert.isTrue((await admin(gateway, "POST", "/admin/replay", undefined, gateway.adminToken)).body.ok)
    } finally {
      await gateway.close()
    }
  }, 90_000)

  it("a process killed before the database came back leaves its settlements to the next one", async () => {
    const port = await freePort()
    const env = childEnv(proxied, join(dir, "tollgate.yaml"), dir)
    let gateway = await startGateway(env, port)
    const { accountId, key } = await fundedKey(gateway, ADMIN_TOKEN)
    const responses = await Promise.all(Array.from({ length: 4 }, () => chat(gateway.url, key, true)))
    await outage.down()
    const finished = await Promise.all(responses.map((r) => readDeltas(r, () => undefined)))
    assert.deepStrictEqual(finished, [true, true, true, true])
    const journal = join(dir, "data", JOURNAL_FILE)
    for (let i = 0; i < 50 && !(existsSync(journal) && readFileSync(journal, "utf8").split("\n").length > 4); i++) {
      await sleep(100)
    }
    assert.strictEqual(readFileSync(journal, "utf8").trim().split("\n").length, 4, "four settlements journaled")
    await killHard(gateway)
    await outage.up()
    gateway = await startGateway(env, port)
    try {
      assert.strictEqual((await untilNothingHeld(gateway, accountId, 30)).held, "0.000000")
      const holds = await holdStatuses(accountId)
      assert.deepStrictEqual(
        holds.map((h) => h.status),
        ["settled", "settled", "settled", "settled"]
      )
      assert.isTrue((await admin(gateway, "POST", "/admin/replay")).body.ok)
    } finally {
      await killHard(gateway)
    }
  }, 120_000)
})
