/**
 * `kill -9` of the gateway during streamed, JSON and background responses (real Postgres, the gateway a child
 * process): after a restart on the same database, every background response reaches a final state within the stated
 * time (its lease, 30 s, and a claim round), every hold is resolved once, and whatever was charged is retrievable
 * with its output: responses cut off before they were stored cost nothing, the one finished before the kill is
 * billed once and readable, and a background response's replay agrees with what `GET` says.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import {
  childEnv,
  admin,
  assertEachHoldResolvedOnce,
  type Gateway,
  killHard,
  ledgerOf,
  sleep,
  startGateway,
  untilNothingHeld
} from "../support/ChildGateway.ts"
import { freePort } from "../support/Ports.ts"
import { createPostgresDatabase } from "../support/TestDatabase.ts"

const baseUrl = process.env.TEST_DATABASE_URL
const TERMINAL = ["completed", "failed", "cancelled", "incomplete"]

type Json = Record<string, unknown>

describe.skipIf(baseUrl === undefined || baseUrl === "")("kill -9 during responses", () => {
  let quick: RunningSimulator
  let thinking: RunningSimulator
  let database: { readonly url: string; drop(): Promise<void> }
  let dir: string
  let env: Record<string, string>
  let port: number
  let gateway: Gateway | undefined

  beforeAll(async () => {
    quick = await startSimulator({ faults: { chunkDelayMs: 80 }, replyTokens: 60 })
    thinking = await startSimulator({ faults: { latencyMs: 10_000 } })
    database = await createPostgresDatabase(baseUrl as string)
    dir = mkdtempSync(join(tmpdir(), "tollgate-responses-kill-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(
      configPath,
      `
upstreams:
  quick: { protocol: openai-responses, baseUrl: "${quick.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 30000 }
  thinking: { protocol: anthropic, baseUrl: "${thinking.baseUrl}", apiKey: "sk-sim-test-key", timeoutMs: 30000 }
models:
  - { id: quick, plugin: text, upstreams: [quick], upstreamModel: sim-responses, pricing: { input: "0.15", output: "0.60" } }
  - { id: thinking, plugin: text, upstreams: [thinking], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
ledger: { holdTtlSeconds: 2 }
`
    )
    port = await freePort()
    env = childEnv(database.url, configPath, dir)
  }, 60_000)

  afterAll(async () => {
    if (gateway !== undefined && gateway.child.exitCode === null && gateway.child.signalCode === null) {
      await killHard(gateway)
    }
    await quick?.close()
    await thinking?.close()
    await database?.drop()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("streamed, JSON and background responses: charged ones retrievable, the rest free, all final in time", {
    timeout: 180_000
  }, async () => {
    gateway = await startGateway(env, port)
    const account = await admin(gateway, "POST", "/admin/accounts", { name: "kill-responses" })
    await admin(gateway, "POST", `/admin/accounts/${account.body.id}/deposits`, { amount: "50", reference: "k-1" })
    const key = (await admin(gateway, "POST", `/admin/accounts/${account.body.id}/keys`, { name: "k" })).body.key
    const live = gateway
    const post = (body: Json) =>
      fetch(`${live.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body)
      })
    const get = async (url: string, path: string) => {
      const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } })
      return { status: response.status, body: (await response.json()) as Json }
    }

    // Finished before the kill: billed once, retrievable.
    const done = (await (await post({ model: "quick", input: "Hello" })).json()) as Json
    assert.strictEqual(done.status, "completed")

    // In flight at the kill: a stream past its first delta, a JSON call and background calls waiting upstream.
    const stream = await post({ model: "quick", input: "Tell me a story", stream: true })
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader()
    let seen = ""
    while (!seen.includes("response.output_text.delta")) seen += new TextDecoder().decode((await reader.read()).value)
    const streamedId = /"id":"(resp_[0-9a-f]+)"/.exec(seen)?.[1] as string
    const json = post({ model: "thinking", input: "Hello" }).catch(() => undefined)
    const background = await Promise.all(
      [0, 1].map(
        async () =>
          ((await (await post({ model: "thinking", input: "Hi", background: true })).json()) as Json).id as string
      )
    )
    await sleep(1_000) // claimed and waiting upstream
    for (const id of background)
      assert.strictEqual((await get(live.url, `/v1/responses/${id}`)).body.status, "in_progress")

    await killHard(gateway)
    await reader.read().catch(() => undefined)
    await json
    const killedAt = Date.now()
    gateway = await startGateway(env, port)
    const restarted = gateway

    // Every background response reaches a final state within its lease (30 s) and a claim round.
    for (const id of background) {
      let status = ""
      while (!TERMINAL.includes(status) && Date.now() - killedAt < 45_000) {
        status = String((await get(restarted.url, `/v1/responses/${id}`)).body.status)
        if (!TERMINAL.includes(status)) await sleep(250)
      }
      assert.strictEqual(status, "failed", `${id} final within 45 s of the kill`)
      const replay = await fetch(`${restarted.url}/v1/responses/${id}?stream=true`, {
        headers: { authorization: `Bearer ${key}` }
      })
      const events = (await replay.text())
        .split("\n")
        .filter((line) => line.startsWith("data: "))
        .map((line) => JSON.parse(line.slice(6)) as Json)
      assert.strictEqual(events.at(-1)?.type, "response.failed", "the replay agrees with GET")
    }
    assert.strictEqual((await get(restarted.url, `/v1/responses/${streamedId}`)).status, 404, "not stored: not billed")
    assert.strictEqual((await get(restarted.url, `/v1/responses/${done.id}`)).body.status, "completed")

    const balance = await untilNothingHeld(restarted, account.body.id, 60)
    assert.strictEqual(balance.held, "0.000000")
    const entries = await ledgerOf(restarted, account.body.id)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 5)
    const charged = entries.filter((e) => e.type === "UsageRecalculated")
    assert.strictEqual(charged.length, 1, "only the response finished before the kill is charged")
    assert.strictEqual(Math.round(Number(balance.captured) * 1e6), Math.round(Number(charged[0]?.amount) * 1e6))
    const replay = await admin(restarted, "POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    await killHard(restarted)
  })
})
