/**
 * No secret in any log line, response or stored row: a real gateway (file-backed PGlite, so every table can be read
 * afterwards) runs a broad session — accounts and keys, chats in three protocols, streams, bad and missing keys, a
 * wrong admin token, a revoked key, upstream failures (5xx, 429, malformed, a cut stream, an upstream refusing the
 * gateway's own key, which disables it and raises an alert), replay and audit — while everything the process writes
 * is captured. Then the captured output, every response (status line, headers, body) and every row of every table
 * are searched for the customer keys, the admin token, the upstream key and the alert webhook's signing secret.
 */
import { PGlite } from "@electric-sql/pglite"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_API_KEY, type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"
import type { Wire } from "../http/chat/Fixtures.ts"
import { type Capture, captureOutput } from "./Capture.ts"

/** Signs alert deliveries; the config's webhook (a loopback URL the guarded fetcher refuses) fails to deliver, loudly. */
const WEBHOOK_SECRET = "whsec_never_anywhere_4242"

let sim: RunningSimulator
let locked: RunningSimulator
let gateway: TestGateway
let dir: string
let capture: Capture
const transcripts: Array<string> = []

const config = (sim: string, locked: string) => `
upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim}/v1", apiKey: "${DEFAULT_API_KEY}", timeoutMs: 5000, idleTimeoutMs: 2000 }
  sim-anthropic: { protocol: anthropic, baseUrl: "${sim}", apiKey: "${DEFAULT_API_KEY}", timeoutMs: 5000 }
  sim-gemini: { protocol: gemini, baseUrl: "${sim}", apiKey: "${DEFAULT_API_KEY}", timeoutMs: 5000 }
  sim-responses: { protocol: openai-responses, baseUrl: "${sim}/v1", apiKey: "${DEFAULT_API_KEY}", timeoutMs: 5000 }
  locked: { protocol: openai, baseUrl: "${locked}/v1", apiKey: "${DEFAULT_API_KEY}", timeoutMs: 5000 }
models:
  - { id: sim-openai, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-anthropic, plugin: text, upstreams: [sim-anthropic], upstreamModel: sim-anthropic, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-gemini, plugin: text, upstreams: [sim-gemini], upstreamModel: sim-gemini, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-responses, plugin: text, upstreams: [sim-responses], upstreamModel: sim-responses, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-locked, plugin: text, upstreams: [locked], upstreamModel: sim-locked, pricing: { input: "0.15", output: "0.60" } }
alerts:
  - { url: "http://127.0.0.1:9/hook", events: ["*"], secret: "${WEBHOOK_SECRET}", balanceBelow: "4.99" }
`

beforeAll(async () => {
  capture = captureOutput()
  sim = await startSimulator()
  // This upstream wants another key, so it refuses the gateway's with its vendor's 401.
  locked = await startSimulator({ apiKey: "sk-sim-other-key" })
  dir = mkdtempSync(join(tmpdir(), "tollgate-secrets-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, config(sim.baseUrl, locked.baseUrl))
  gateway = await startTestGateway({ configPath, database: { kind: "pglite", dataDir: join(dir, "pglite") } })
}, 60_000)

afterAll(async () => {
  capture?.stop()
  await sim?.close()
  await locked?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

/** A request whose whole answer (status, headers, body) goes into the transcript. */
const call = async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text().catch((error: unknown) => `<body failed: ${String(error)}>`)
  transcripts.push(`${response.status} ${JSON.stringify([...response.headers])}\n${text}`)
  let json: Wire = null
  try {
    json = JSON.parse(text)
  } catch {
    json = null
  }
  return { status: response.status, text, json }
}

const hello = [{ role: "user", content: "Hello there" }]

describe("secrets", () => {
  it("never appear in a log line, a response or a stored row", async () => {
    const adminHeaders = { authorization: `Bearer ${gateway.adminToken}` }
    const account = await call("POST", "/admin/accounts", adminHeaders, { name: "secrets" })
    assert.strictEqual(account.status, 201)
    const accountId = account.json.id as string
    await call("POST", `/admin/accounts/${accountId}/deposits`, adminHeaders, { amount: "5", reference: "s-1" })
    const created = await call("POST", `/admin/accounts/${accountId}/keys`, adminHeaders, { name: "main" })
    const key = created.json.key as string
    const spare = (await call("POST", `/admin/accounts/${accountId}/keys`, adminHeaders, { name: "spare" })).json
    // The key is shown once, at creation; its secret part must appear nowhere after that.
    transcripts.splice(-2, 2)
    const auth = { authorization: `Bearer ${key}` }

    // Chats in each protocol, plain and streamed.
    for (const model of ["sim-openai", "sim-anthropic", "sim-gemini"]) {
      assert.strictEqual((await call("POST", "/v1/chat/completions", auth, { model, messages: hello })).status, 200)
      const streamed = await call("POST", "/v1/chat/completions", auth, { model, messages: hello, stream: true })
      assert.strictEqual(streamed.status, 200)
    }
    // The Responses API stores conversations: what it keeps must hold no key either.
    for (const model of ["sim-responses", "sim-anthropic"]) {
      const first = await call("POST", "/v1/responses", auth, {
        model,
        input: "Hello",
        include: ["reasoning.encrypted_content"]
      })
      assert.strictEqual(first.status, 200)
      const next = { model, input: "Again", previous_response_id: first.json.id, stream: true }
      assert.strictEqual((await call("POST", "/v1/responses", auth, next)).status, 200)
    }
    const messages = await call(
      "POST",
      "/v1/messages",
      { "x-api-key": key, "anthropic-version": "2023-06-01" },
      { model: "sim-openai", max_tokens: 64, messages: hello, stream: true }
    )
    assert.strictEqual(messages.status, 200)
    const gemini = await call(
      "POST",
      `/v1beta/models/sim-anthropic:generateContent?key=${key}`,
      {},
      {
        contents: [{ role: "user", parts: [{ text: "Hello" }] }]
      }
    )
    assert.strictEqual(gemini.status, 200)
    assert.strictEqual((await call("GET", "/v1/models", auth)).status, 200)
    assert.strictEqual(
      (await call("POST", "/v1/messages/count_tokens", { "x-api-key": key }, { model: "sim-openai", messages: hello }))
        .status,
      200
    )

    // Bad credentials: an unknown key close to the real one, a missing key, a malformed one, a wrong admin token.
    const near = `${key.slice(0, -1)}${key.at(-1) === "A" ? "B" : "A"}`
    assert.strictEqual(
      (await call("POST", "/v1/chat/completions", { authorization: `Bearer ${near}` }, {})).status,
      401
    )
    assert.strictEqual((await call("POST", "/v1/chat/completions", {}, {})).status, 401)
    assert.strictEqual(
      (await call("POST", "/v1/messages", { "x-api-key": `${key}-and-more` }, { model: "sim-openai" })).status,
      401
    )
    const wrongAdmin = await call("GET", "/admin/accounts", { authorization: `Bearer ${gateway.adminToken}x` })
    assert.strictEqual(wrongAdmin.status, 401)

    // A revoked key.
    assert.strictEqual((await call("DELETE", `/admin/keys/${spare.id}`, adminHeaders)).status, 200)
    const revoked = await call("GET", "/v1/models", { authorization: `Bearer ${spare.key}` })
    assert.strictEqual(revoked.status, 401)

    // Upstream failures: 5xx, 429, malformed JSON, a cut stream, a stall past the idle timeout, a refused upstream key.
    sim.setFaults({ status: 500 }, 1)
    assert.strictEqual(
      (await call("POST", "/v1/chat/completions", auth, { model: "sim-openai", messages: hello })).status,
      502
    )
    sim.setFaults({ status: 429, retryAfterSeconds: 1 }, 1)
    assert.strictEqual(
      (
        await call(
          "POST",
          "/v1/messages",
          { "x-api-key": key },
          { model: "sim-anthropic", max_tokens: 32, messages: hello }
        )
      ).status,
      429
    )
    sim.setFaults({ malformed: true }, 1)
    assert.isAtLeast(
      (await call("POST", "/v1/chat/completions", auth, { model: "sim-gemini", messages: hello })).status,
      500
    )
    sim.setFaults({ cutAfter: 3, replyTokens: 60 }, 1)
    await call("POST", "/v1/chat/completions", auth, { model: "sim-openai", messages: hello, stream: true })
    sim.setFaults({ stallAfter: 2, replyTokens: 60 }, 1)
    await call("POST", "/v1/chat/completions", auth, { model: "sim-openai", messages: hello, stream: true })
    const refusedUpstream = await call("POST", "/v1/chat/completions", auth, { model: "sim-locked", messages: hello })
    assert.isAtLeast(refusedUpstream.status, 400)
    const upstreams = await call("GET", "/admin/upstreams", adminHeaders)
    assert.include(upstreams.text, "refused the gateway's credentials")
    // The alerts it raised were queued and tried (and refused by the address rule).
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline) {
      const tried = await call("GET", "/admin/alerts/deliveries?limit=50", adminHeaders)
      if ((tried.json.data as Array<{ attempts: number }>).some((row) => row.attempts > 0)) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }

    // Replay, audit, the ledger and the key list.
    const replay = await call("POST", "/admin/replay", adminHeaders)
    assert.strictEqual(replay.status, 200)
    assert.isTrue(replay.json.ok)
    assert.strictEqual((await call("POST", "/admin/audit/verify", adminHeaders)).status, 200)
    assert.strictEqual((await call("GET", `/admin/accounts/${accountId}/ledger?limit=1000`, adminHeaders)).status, 200)
    assert.strictEqual((await call("GET", `/admin/accounts/${accountId}/keys`, adminHeaders)).status, 200)
    await new Promise((resolve) => setTimeout(resolve, 300))
    await gateway.close()

    // Every row of every table, read straight from the database files.
    const db = await PGlite.create(join(dir, "pglite"))
    const tables = await db.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
    )
    const stored: Array<string> = []
    for (const { table_name } of tables.rows) {
      const rows = await db.query(`SELECT * FROM "${table_name}"`)
      stored.push(
        `${table_name}: ${JSON.stringify(rows.rows, (_, v) =>
          typeof v === "bigint" ? String(v) : v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : v
        )}`
      )
    }
    const events = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM events")
    await db.close()
    capture.stop()

    const logs = capture.lines()
    const secrets = {
      "customer key": key.slice(3),
      "revoked key": (spare.key as string).slice(3),
      "admin token": gateway.adminToken,
      "upstream key": DEFAULT_API_KEY,
      "webhook secret": WEBHOOK_SECRET
    }
    const haystacks = { logs: logs.join("\n"), responses: transcripts.join("\n"), database: stored.join("\n") }
    // The captures are real: the upstream failures were logged, the responses and events are there.
    assert.match(haystacks.logs, /request failed/)
    assert.isAbove(transcripts.length, 25)
    assert.isAbove(events.rows[0].n, 20)
    for (const [where, text] of Object.entries(haystacks)) {
      for (const [what, secret] of Object.entries(secrets)) {
        assert.isFalse(text.includes(secret), `the ${what} appears in the ${where}`)
      }
    }
  })
})
