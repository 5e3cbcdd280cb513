import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Agent, request } from "node:http"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let gateway: TestGateway
let key: string

beforeAll(async () => {
  gateway = await startTestGateway()
  const admin = (path: string, body: unknown) =>
    fetch(`${gateway.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
      body: JSON.stringify(body)
    }).then((r) => r.json() as Promise<Record<string, string>>)
  const account = await admin("/admin/accounts", { name: "public" })
  key = (await admin(`/admin/accounts/${account.id}/keys`, { name: "k" })).key
}, 60_000)
afterAll(async () => {
  await gateway?.close()
})

describe("public API", () => {
  it("answers the health probes", async () => {
    assert.deepStrictEqual(await (await fetch(`${gateway.url}/healthz`)).json(), { status: "ok" })
    assert.deepStrictEqual(await (await fetch(`${gateway.url}/readyz`)).json(), { status: "ready" })
  })

  it("answers HEAD / and GET / with 200 (clients check that something listens before they start)", async () => {
    const head = await fetch(`${gateway.url}/`, { method: "HEAD" })
    assert.strictEqual(head.status, 200)
    assert.strictEqual(await head.text(), "")
    const got = await fetch(`${gateway.url}/`)
    assert.strictEqual(got.status, 200)
    assert.include(await got.json(), { object: "tollgate", status: "ok" })
    assert.strictEqual((await fetch(`${gateway.url}/healthz`, { method: "HEAD" })).status, 200)
    assert.strictEqual((await fetch(`${gateway.url}/no/such/path`, { method: "HEAD" })).status, 404)
  })

  it("keeps an idle connection open 65 s, past the 60 s of load balancers and SDK agents (Node's default is 5 s)", async () => {
    const agent = new Agent({ keepAlive: true })
    const header = await new Promise<string | undefined>((resolve, reject) => {
      request(`${gateway.url}/healthz`, { agent }, (response) => {
        response.resume()
        resolve(response.headers["keep-alive"]?.toString())
      })
        .on("error", reject)
        .end()
    })
    agent.destroy()
    assert.strictEqual(header, "timeout=65")
  })

  it("retrieves one model, and answers an unknown one with 404 model_not_found", async () => {
    const found = await fetch(`${gateway.url}/v1/models/sim-openai`, { headers: { authorization: `Bearer ${key}` } })
    assert.deepStrictEqual(await found.json(), {
      id: "sim-openai",
      object: "model",
      created: 1_767_225_600,
      owned_by: "simulator",
      // Extra fields, as decimal USD per 1M tokens: a call's prices, and a batch line's (half, without batch keys).
      pricing: { input: "0.150000", output: "0.600000" },
      batch_pricing: { input: "0.075000", output: "0.300000" }
    })
    const missing = await fetch(`${gateway.url}/v1/models/nope`, { headers: { authorization: `Bearer ${key}` } })
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(((await missing.json()) as { error: { code: string } }).error.code, "model_not_found")
  })

  it("lists the catalog in Google's shape on /v1beta/models with ?key=", async () => {
    const response = await fetch(`${gateway.url}/v1beta/models?key=${key}`)
    const body = (await response.json()) as { models: Array<{ name: string }> }
    assert.includeMembers(
      body.models.map((m) => m.name),
      ["models/sim-openai", "models/sim-anthropic", "models/sim-gemini"]
    )
  })
})
