/**
 * Usage reports and the self-service balance against a real gateway: calls on two keys and two models, then the
 * operator's report grouped every way, the key holder's own report (never another account's), and `/v1/balance`.
 * Every report's cost equals what the ledger captured.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { formatMicros, parseDecimal } from "../../../src/domain/Money.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, closeAfterReplay, makeAdmin } from "../chat/ChatHarness.ts"

let gateway: TestGateway
let admin: Admin
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
}, 60_000)
afterAll(() => closeAfterReplay({ admin, close: () => gateway.close() }))

const chat = async (key: string, model: string, text: string) => {
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: text }], max_tokens: 40 })
  })
  assert.strictEqual(response.status, 200, await response.clone().text())
  return (await response.json()) as { usage: { prompt_tokens: number; completion_tokens: number } }
}

const get = async (path: string, bearer: string) => {
  const response = await fetch(`${gateway.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } })
  return { status: response.status, body: await response.json() }
}

describe("usage reports", () => {
  it("sums requests, tokens and cost per day, model and key; a key holder sees only their own account", async () => {
    const customer = await admin.customer({ deposit: "5" })
    const second = await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, { name: "second" })
    const otherKey: string = second.body.key
    const replies = [
      await chat(customer.key, "sim-openai", "hello there"),
      await chat(customer.key, "sim-openai", "and again"),
      await chat(otherKey, "sim-anthropic", "from the second key")
    ]
    const stranger = await admin.customer()
    await chat(stranger.key, "sim-openai", "someone else")

    const total = await get(`/admin/usage?accountId=${customer.accountId}`, gateway.adminToken)
    assert.strictEqual(total.status, 200)
    assert.strictEqual(total.body.data.length, 1)
    const line = total.body.data[0]
    assert.strictEqual(line.requests, 3)
    assert.strictEqual(
      line.inputTokens,
      replies.reduce((s, r) => s + r.usage.prompt_tokens, 0)
    )
    assert.strictEqual(
      line.outputTokens,
      replies.reduce((s, r) => s + r.usage.completion_tokens, 0)
    )
    const balance = await admin.balance(customer.accountId)
    assert.strictEqual(line.cost, balance.captured)

    const byModel = await get(`/admin/usage?accountId=${customer.accountId}&groupBy=model,key`, gateway.adminToken)
    assert.deepStrictEqual(
      byModel.body.data.map((l: { model: string; key: string; requests: number }) => [l.model, l.key, l.requests]),
      [
        ["sim-anthropic", second.body.id, 1],
        ["sim-openai", customer.keyId, 2]
      ].sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1))
    )
    const today = new Date().toISOString().slice(0, 10)
    const byDay = await get(
      `/admin/usage?accountId=${customer.accountId}&groupBy=day&from=${today}`,
      gateway.adminToken
    )
    assert.deepStrictEqual(
      byDay.body.data.map((l: { day: string }) => l.day),
      [today]
    )
    const none = await get(`/admin/usage?accountId=${customer.accountId}&to=${today}`, gateway.adminToken)
    assert.strictEqual(none.body.data[0].requests, 0)

    const own = await get("/v1/usage?groupBy=key", customer.key)
    assert.strictEqual(own.status, 200)
    assert.strictEqual(
      own.body.data.reduce((s: number, l: { requests: number }) => s + l.requests, 0),
      3
    )
    const theirs = await get(`/v1/usage?accountId=${stranger.accountId}`, customer.key)
    assert.strictEqual(theirs.status, 400)
    const bad = await get("/admin/usage?groupBy=week", gateway.adminToken)
    assert.strictEqual(bad.status, 400)
    assert.strictEqual(bad.body.error.param, "groupBy")
    const anonymous = await get("/admin/usage", "nope")
    assert.strictEqual(anonymous.status, 401)
  })

  it("GET /v1/balance shows the account's balance and the key's spend", async () => {
    const customer = await admin.customer({ deposit: "2" })
    await admin.call("POST", `/admin/accounts/${customer.accountId}/keys`, { name: "limited", spendLimit: "1.00" })
    await chat(customer.key, "sim-openai", "what is my balance")
    const { status, body } = await get("/v1/balance", customer.key)
    assert.strictEqual(status, 200)
    const ledger = await admin.balance(customer.accountId)
    const settled = formatMicros((parseDecimal(ledger.deposited) as bigint) - (parseDecimal(ledger.captured) as bigint))
    assert.strictEqual(body.balance, settled)
    assert.strictEqual(body.held, "0.000000")
    assert.strictEqual(body.available, settled)
    assert.strictEqual(body.key.id, customer.keyId)
    assert.strictEqual(body.key.spent, ledger.captured)
    assert.isNull(body.key.spendLimit)
    const unauthenticated = await fetch(`${gateway.url}/v1/balance`)
    assert.strictEqual(unauthenticated.status, 401)
  })
})
