/**
 * Failed-authentication throttling over HTTP, and how keys are kept. Loopback is a whole /8 on Linux, so clients
 * bind distinct source addresses (127.0.0.2, 127.0.0.3, …) to act as different hosts against one gateway.
 */
import { memoryPglite } from "../support/PgliteTemplate.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { createHash } from "node:crypto"
import { Agent, fetch as undiciFetch } from "undici"
import { tmpdir } from "node:os"
import { servicesLayer } from "../../src/AppLayer.ts"
import { Keys } from "../../src/app/Keys.ts"
import { Ledger } from "../../src/app/Ledger.ts"
import { type Admin, makeAdmin } from "../http/chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let gateway: TestGateway
let admin: Admin
const agents: Array<Agent> = []

beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.close()))
  await gateway?.close()
})

/** A client on its own loopback source address. */
const from = (localAddress: string) => {
  const dispatcher = new Agent({ localAddress })
  agents.push(dispatcher)
  return async (path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}) => {
    const response = await undiciFetch(`${gateway.url}${path}`, {
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      headers: { "content-type": "application/json", ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      dispatcher
    })
    const text = await response.text()
    return { status: response.status, headers: response.headers, body: text.length > 0 ? JSON.parse(text) : null }
  }
}

const chat = { model: "sim-openai", messages: [{ role: "user", content: "Hi" }], max_tokens: 16 }
// Well-formed (the prefix and 43 characters) but issued to nobody; built, so no key-shaped literal sits in the tree.
const bad = `sk-${"0".repeat(43)}`

describe("failed-auth throttling per client address", () => {
  it("answers 429 with retry-after after 20 failed keys, in each protocol's envelope; other addresses unaffected", async () => {
    const customer = await admin.customer()
    const attacker = from("127.0.0.2")
    const bystander = from("127.0.0.3")
    const reasons = [bad, "not-a-key", "", "sk-short"]
    for (let i = 0; i < 20; i++) {
      const key = reasons[i % reasons.length]
      const response = await attacker("/v1/chat/completions", {
        headers: key === "" ? {} : { authorization: `Bearer ${key}` },
        body: chat
      })
      assert.strictEqual(response.status, 401, `failure ${i + 1}`)
    }
    const openai = await attacker("/v1/chat/completions", { headers: { authorization: `Bearer ${bad}` }, body: chat })
    assert.strictEqual(openai.status, 429)
    assert.match(openai.headers.get("retry-after") ?? "", /^\d+$/)
    assert.isAtMost(Number(openai.headers.get("retry-after")), 60)
    assert.strictEqual(openai.body.error.type, "rate_limit_error")
    assert.strictEqual(openai.body.error.code, "too_many_failed_authentications")

    const anthropic = await attacker("/v1/messages", {
      headers: { "x-api-key": bad, "anthropic-version": "2023-06-01" },
      body: { model: "sim-openai", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }
    })
    assert.strictEqual(anthropic.status, 429)
    assert.strictEqual(anthropic.body.type, "error")
    assert.strictEqual(anthropic.body.error.type, "rate_limit_error")

    const google = await attacker("/v1beta/models/sim-gemini:generateContent", {
      headers: { "x-goog-api-key": bad },
      body: { contents: [{ parts: [{ text: "Hi" }] }] }
    })
    assert.strictEqual(google.status, 429)
    assert.strictEqual(google.body.error.status, "RESOURCE_EXHAUSTED")

    // A valid key and the admin token are refused too while the address is blocked (no oracle for a guesser).
    const valid = await attacker("/v1/chat/completions", {
      headers: { authorization: `Bearer ${customer.key}` },
      body: chat
    })
    assert.strictEqual(valid.status, 429)
    const adminBlocked = await attacker("/admin/accounts", {
      headers: { authorization: `Bearer ${gateway.adminToken}` }
    })
    assert.strictEqual(adminBlocked.status, 429)
    assert.strictEqual(adminBlocked.body.error.code, "too_many_failed_authentications")

    // Another address is served as usual, and nothing was held for the refused requests.
    const served = await bystander("/v1/chat/completions", {
      headers: { authorization: `Bearer ${customer.key}` },
      body: chat
    })
    assert.strictEqual(served.status, 200)
    const listed = await bystander("/admin/accounts", { headers: { authorization: `Bearer ${gateway.adminToken}` } })
    assert.strictEqual(listed.status, 200)
    const holds = (await admin.ledger(customer.accountId)).filter((e) => e.type === "HoldPlaced")
    assert.lengthOf(holds, 1)
  })

  it("counts wrong admin tokens, revoked keys and expired keys as failures", async () => {
    const customer = await admin.customer()
    const revoked = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, { name: "gone" })
    await admin.call("DELETE", `/admin/keys/${revoked.body.id}`)
    const client = from("127.0.0.4")
    for (let i = 0; i < 10; i++) {
      const response = await client("/admin/accounts", { headers: { authorization: "Bearer wrong-admin-token" } })
      assert.strictEqual(response.status, 401)
    }
    for (let i = 0; i < 10; i++) {
      const response = await client("/v1/models", { headers: { authorization: `Bearer ${revoked.body.key}` } })
      assert.strictEqual(response.status, 401)
      assert.match(response.body.error.message, /revoked/)
    }
    const refused = await client("/v1/models", { headers: { authorization: `Bearer ${customer.key}` } })
    assert.strictEqual(refused.status, 429)
    // The customer's own key keeps working from its own address.
    const fine = await from("127.0.0.5")("/v1/models", { headers: { authorization: `Bearer ${customer.key}` } })
    assert.strictEqual(fine.status, 200)
  })
})

describe("stored keys", () => {
  it.effect("the api_keys table holds the SHA-256 digest and a display prefix, never the key", () =>
    Effect.gen(function* () {
      const ledger = yield* Ledger
      const keys = yield* Keys
      const sql = yield* SqlClient.SqlClient
      const account = yield* ledger.openAccount("hashes")
      const created = yield* keys.create(account.id, { name: "k", models: null, expiresAt: null, spendLimit: null })
      const rows = yield* sql<Record<string, unknown>>`SELECT * FROM api_keys`
      assert.lengthOf(rows, 1)
      const row = rows[0]
      const digest = createHash("sha256").update(created.key).digest()
      assert.isTrue(Buffer.from(row.key_hash as Uint8Array).equals(digest))
      const secretPart = created.key.slice(8)
      for (const [column, value] of Object.entries(row)) {
        const text =
          value instanceof Uint8Array
            ? Buffer.from(value).toString("latin1")
            : JSON.stringify(value ?? null, (_, v) => (typeof v === "bigint" ? String(v) : v))
        assert.notInclude(text, created.key, column)
        assert.notInclude(text, secretPart, column)
      }
      // Nor do the events of the key's stream.
      const events = yield* sql<{ data: unknown; metadata: unknown }>`SELECT data, metadata FROM events`
      assert.notInclude(JSON.stringify(events), secretPart)
      // Authentication is a lookup by digest: the key is accepted, a one-character change is not.
      yield* keys.authenticate(created.key)
      const last = created.key.at(-1) === "A" ? "B" : "A"
      const rejected = yield* Effect.flip(keys.authenticate(`${created.key.slice(0, -1)}${last}`))
      assert.strictEqual(rejected._tag, "KeyRejected")
    }).pipe(
      Effect.provide(
        servicesLayer({
          database: memoryPglite(),
          adminToken: Redacted.make("unused"),
          maxBodyBytes: 1024,
          contentDir: tmpdir()
        })
      )
    )
  )
})
