/**
 * The HTTP surface an attacker sees: every path under /admin asks for the admin token first (known routes and
 * unknown ones alike, so nothing can be learned about which exist), and CORS is closed: no response carries
 * Access-Control-Allow-* headers, so a browser page on another origin cannot call the gateway with a user's key.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let gateway: TestGateway
beforeAll(async () => {
  // This suite fails authentication on purpose ~50 times: past the throttle's 20 a minute they would all be 429s.
  gateway = await startTestGateway({ video: { enabled: false }, authThrottle: { maxFailures: 1_000 } })
}, 60_000)
afterAll(() => gateway?.close())

const someId = "6f1d2a4e-0b7c-4d39-9a55-1d2e3f4a5b6c"
const adminRoutes: ReadonlyArray<readonly [string, string]> = [
  ["GET", "/admin/accounts"],
  ["POST", "/admin/accounts"],
  ["GET", `/admin/accounts/${someId}`],
  ["GET", `/admin/accounts/${someId}?asOf=1`],
  ["POST", `/admin/accounts/${someId}/deposits`],
  ["GET", `/admin/accounts/${someId}/keys`],
  ["POST", `/admin/accounts/${someId}/keys`],
  ["DELETE", `/admin/keys/${someId}`],
  ["GET", `/admin/accounts/${someId}/ledger`],
  ["GET", `/admin/accounts/${someId}/statement`],
  ["GET", "/admin/usage"],
  ["POST", "/admin/replay"],
  ["POST", "/admin/audit/verify"],
  ["POST", "/admin/audit/checkpoint"],
  ["GET", "/admin/does-not-exist"],
  ["PUT", "/admin/accounts"],
  ["GET", "/admin/"]
]

const call = (method: string, path: string, headers: Record<string, string> = {}) =>
  fetch(`${gateway.url}${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(method === "GET" || method === "DELETE" ? {} : { body: "{}" })
  })

describe("the admin surface", () => {
  it.each(adminRoutes)("%s %s answers 401 without the admin token, and with a wrong one", async (method, path) => {
    const attempts: ReadonlyArray<Record<string, string>> = [
      {},
      { authorization: "Bearer tga_wrong" },
      { authorization: `Bearer ${gateway.adminToken}x` }
    ]
    for (const headers of attempts) {
      const answer = await call(method, path, headers)
      assert.strictEqual(answer.status, 401, `${method} ${path} ${JSON.stringify(headers)}`)
      const body = await answer.json()
      assert.strictEqual(body.error.code, "invalid_admin_token")
      assert.notInclude(JSON.stringify(body), gateway.adminToken)
    }
  })

  it("an unknown admin path is a 404 once the token is right", async () => {
    const answer = await call("GET", "/admin/does-not-exist", { authorization: `Bearer ${gateway.adminToken}` })
    assert.strictEqual(answer.status, 404)
    assert.include((await answer.json()).error.message, "/admin/does-not-exist")
    const known = await call("GET", "/admin/accounts", { authorization: `Bearer ${gateway.adminToken}` })
    assert.strictEqual(known.status, 200)
  })
})

describe("CORS is closed by default", () => {
  it.each([
    "/v1/chat/completions",
    "/v1/models",
    "/v1/messages",
    "/admin/accounts",
    "/v1beta/models/sim-gemini:generateContent"
  ])("a cross-origin preflight to %s is not allowed", async (path) => {
    const preflight = await fetch(`${gateway.url}${path}`, {
      method: "OPTIONS",
      headers: {
        origin: "https://evil.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type"
      }
    })
    await preflight.arrayBuffer()
    for (const [name] of preflight.headers) assert.notMatch(name, /^access-control-allow-/, `${path}: ${name}`)
    const simple = await fetch(`${gateway.url}${path}`, { headers: { origin: "https://evil.example" } })
    await simple.arrayBuffer()
    for (const [name] of simple.headers) assert.notMatch(name, /^access-control-allow-/, `${path}: ${name}`)
  })
})
