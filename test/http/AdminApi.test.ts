import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let gateway: TestGateway
let small: TestGateway

beforeAll(async () => {
  gateway = await startTestGateway()
  small = await startTestGateway({ maxBodyBytes: 1024 })
}, 60_000)
afterAll(async () => {
  await gateway?.close()
  await small?.close()
})

const call = async (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  target: TestGateway = gateway
) => {
  const response = await fetch(`${target.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${target.adminToken}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers
    },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text.length > 0 ? JSON.parse(text) : null }
}

const newAccount = async (name = "acme") => (await call("POST", "/admin/accounts", { name })).body as { id: string }

describe("admin API", () => {
  it("refuses a missing or wrong admin token with 401 in the OpenAI envelope", async () => {
    for (const authorization of ["", "Bearer nope", `Basic ${gateway.adminToken}`]) {
      const response = await call("GET", "/admin/accounts", undefined, { authorization })
      assert.strictEqual(response.status, 401)
      assert.strictEqual(response.body.error.code, "invalid_admin_token")
      assert.notInclude(JSON.stringify(response.body), gateway.adminToken)
    }
  })

  it("creates an account and shows its balance as decimal strings", async () => {
    const created = await call("POST", "/admin/accounts", { name: "acme" })
    assert.strictEqual(created.status, 201)
    assert.deepStrictEqual(Object.keys(created.body).sort(), ["createdAt", "id", "name"])
    const shown = await call("GET", `/admin/accounts/${created.body.id}`)
    assert.deepStrictEqual(shown.body.balance, {
      deposited: "0.000000",
      captured: "0.000000",
      held: "0.000000",
      available: "0.000000"
    })
    assert.isString(shown.headers.get("x-request-id"))
  })

  it("deposits a reference once, whatever the number of retries", async () => {
    const account = await newAccount()
    const first = await call("POST", `/admin/accounts/${account.id}/deposits`, { amount: "12.5", reference: "inv-1" })
    assert.strictEqual(first.status, 201)
    assert.strictEqual(first.body.amount, "12.500000")
    const again = await call("POST", `/admin/accounts/${account.id}/deposits`, { amount: "12.5", reference: "inv-1" })
    assert.strictEqual(again.status, 200)
    assert.isTrue(again.body.duplicate)
    const shown = await call("GET", `/admin/accounts/${account.id}`)
    assert.strictEqual(shown.body.balance.deposited, "12.500000")
    assert.strictEqual(shown.body.balance.available, "12.500000")
  })

  it("answers bad bodies with a 400 that names the field, and writes nothing", async () => {
    const account = await newAccount()
    const cases: ReadonlyArray<readonly [unknown, string, RegExp]> = [
      [{ amount: "-5", reference: "r" }, "amount", /negative/],
      [{ amount: "abc", reference: "r" }, "amount", /decimal string/],
      [{ amount: 5, reference: "r" }, "amount", /decimal string/],
      [{ amount: "1.1234567", reference: "r" }, "amount", /6 decimal places/],
      [{ amount: "0", reference: "r" }, "amount", /greater than zero/],
      [{ amount: "1" }, "reference", /required/]
    ]
    for (const [body, param, message] of cases) {
      const response = await call("POST", `/admin/accounts/${account.id}/deposits`, body)
      assert.strictEqual(response.status, 400, JSON.stringify(body))
      assert.strictEqual(response.body.error.param, param)
      assert.match(response.body.error.message, message)
    }
    const malformed = await call("POST", `/admin/accounts/${account.id}/deposits`, "{not json")
    assert.strictEqual(malformed.status, 400)
    assert.match(malformed.body.error.message, /not valid JSON/)
    const wrongType = await call("POST", "/admin/accounts", "name=x", { "content-type": "text/plain" })
    assert.strictEqual(wrongType.status, 415)
    const missingName = await call("POST", "/admin/accounts", {})
    assert.strictEqual(missingName.body.error.param, "name")
    const ledger = await call("GET", `/admin/accounts/${account.id}/ledger`)
    assert.deepStrictEqual(
      ledger.body.data.map((e: { type: string }) => e.type),
      ["AccountOpened"]
    )
  })

  it("answers unknown accounts and keys with 404", async () => {
    assert.strictEqual((await call("GET", "/admin/accounts/00000000-0000-0000-0000-000000000000")).status, 404)
    assert.strictEqual((await call("GET", "/admin/accounts/not-a-uuid")).status, 404)
    const deposit = await call("POST", "/admin/accounts/00000000-0000-0000-0000-000000000000/deposits", {
      amount: "1",
      reference: "x"
    })
    assert.strictEqual(deposit.status, 404)
    assert.strictEqual((await call("DELETE", "/admin/keys/00000000-0000-0000-0000-000000000000")).status, 404)
  })

  it("refuses oversized bodies with 413", async () => {
    const response = await call("POST", "/admin/accounts", { name: "x".repeat(5000) }, {}, small)
    assert.strictEqual(response.status, 413)
  })

  it("creates keys shown once, lists them without secrets, and revocation takes effect on the next request", async () => {
    const account = await newAccount()
    const created = await call("POST", `/admin/accounts/${account.id}/keys`, {
      name: "ci",
      models: ["sim-openai"],
      spendLimit: "5"
    })
    assert.strictEqual(created.status, 201)
    assert.match(created.body.key, /^sk-[0-9A-Za-z]{43}$/)
    assert.strictEqual(created.body.spendLimit, "5.000000")
    const listed = await call("GET", `/admin/accounts/${account.id}/keys`)
    assert.strictEqual(listed.body.data.length, 1)
    assert.notInclude(JSON.stringify(listed.body), created.body.key)
    assert.isUndefined(listed.body.data[0].key)

    const models = (key: string, headers: Record<string, string> = {}) =>
      fetch(`${gateway.url}/v1/models`, { headers: { authorization: `Bearer ${key}`, ...headers } })
    assert.strictEqual((await models(created.body.key)).status, 200)
    const revoked = await call("DELETE", `/admin/keys/${created.body.id}`)
    assert.isString(revoked.body.revokedAt)
    const refused = await models(created.body.key)
    assert.strictEqual(refused.status, 401)
    const body = await refused.json()
    assert.match(body.error.message, /revoked/)
  })

  it("refuses expired, unknown and missing keys with 401 in each protocol's envelope", async () => {
    const account = await newAccount()
    // A key cannot be created already expired (400): this one expires a moment after it is made.
    const expired = await call("POST", `/admin/accounts/${account.id}/keys`, {
      name: "old",
      expiresAt: new Date(Date.now() + 1_000).toISOString()
    })
    assert.strictEqual(expired.status, 201)
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    const openai = await fetch(`${gateway.url}/v1/models`, {
      headers: { authorization: `Bearer ${expired.body.key}` }
    })
    assert.strictEqual(openai.status, 401)
    const openaiBody = await openai.json()
    assert.match(openaiBody.error.message, /expired/)
    assert.hasAllKeys(openaiBody.error, ["message", "type", "param", "code"])

    const anthropic = await fetch(`${gateway.url}/v1/models`, {
      headers: { "x-api-key": `sk-${"A".repeat(43)}`, "anthropic-version": "2023-06-01" }
    })
    assert.strictEqual(anthropic.status, 401)
    const anthropicBody = await anthropic.json()
    assert.strictEqual(anthropicBody.type, "error")
    assert.strictEqual(anthropicBody.error.type, "authentication_error")

    const google = await fetch(`${gateway.url}/v1beta/models`)
    assert.strictEqual(google.status, 401)
    const googleBody = await google.json()
    assert.deepStrictEqual(Object.keys(googleBody.error).sort(), ["code", "message", "status"])
    assert.strictEqual(googleBody.error.status, "UNAUTHENTICATED")
  })

  it("pages through an account's ledger oldest first", async () => {
    const account = await newAccount()
    for (let i = 0; i < 5; i++) {
      await call("POST", `/admin/accounts/${account.id}/deposits`, { amount: "1", reference: `r${i}` })
    }
    const first = await call("GET", `/admin/accounts/${account.id}/ledger?limit=4`)
    assert.strictEqual(first.body.data.length, 4)
    assert.deepStrictEqual(
      first.body.data.map((e: { position: number }) => e.position),
      [1, 2, 3, 4]
    )
    const second = await call("GET", `/admin/accounts/${account.id}/ledger?limit=4&after=${first.body.next}`)
    assert.deepStrictEqual(
      second.body.data.map((e: { type: string }) => e.type),
      ["FundsDeposited", "FundsDeposited"]
    )
    assert.isNull(second.body.next)
    const bad = await call("GET", `/admin/accounts/${account.id}/ledger?limit=x`)
    assert.strictEqual(bad.status, 400)
    assert.strictEqual(bad.body.error.param, "limit")
  })

  it("replays every projection from the events and finds no difference", async () => {
    const report = await call("POST", "/admin/replay")
    assert.strictEqual(report.status, 200)
    assert.isTrue(report.body.ok)
    assert.deepStrictEqual(report.body.mismatches, [])
    assert.isAbove(report.body.events, 0)
  })

  it("sends a client with a doubled /v1 a 404 that says so", async () => {
    const response = await fetch(`${gateway.url}/v1/v1/messages`, { method: "POST" })
    assert.strictEqual(response.status, 404)
    const body = await response.json()
    assert.strictEqual(body.type, "error")
    assert.match(body.error.message, /extra \/v1/)
  })
})
