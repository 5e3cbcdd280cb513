/**
 * A database that goes away: requests fail with 503 while it is gone, nothing partial is written, and the gateway
 * recovers by itself when it comes back. Real Postgres only (the embedded store cannot go away); the outage is a TCP
 * proxy in front of the server that drops every connection and refuses new ones.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { randomUUID } from "node:crypto"
import { type Outage, outageBefore } from "../support/Outage.ts"
import { runPostgres } from "../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const baseUrl = process.env.TEST_DATABASE_URL

describe.skipIf(baseUrl === undefined)("database outage (real Postgres)", () => {
  const database = `tollgate_t_${randomUUID().replaceAll("-", "").slice(0, 16)}`
  let gateway: TestGateway
  let outage: Outage

  beforeAll(async () => {
    await runPostgres(baseUrl as string, `CREATE DATABASE ${database}`)
    const direct = new URL(baseUrl as string)
    direct.pathname = `/${database}`
    const proxied = await outageBefore(direct.toString(), 20_000 + Math.floor(Math.random() * 20_000))
    outage = proxied.outage
    gateway = await startTestGateway({ database: { kind: "postgres", url: Redacted.make(proxied.url) } })
  }, 60_000)

  afterAll(async () => {
    await gateway?.close()
    await outage?.down()
    await runPostgres(baseUrl as string, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
  })

  const admin = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${gateway.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    return { status: response.status, body: (await response.json()) as Record<string, unknown> }
  }

  it("answers 503 while the database is gone, writes nothing partial, and recovers when it is back", async () => {
    const account = (await admin("POST", "/admin/accounts", { name: "outage" })).body as { id: string }
    assert.strictEqual(
      (await admin("POST", `/admin/accounts/${account.id}/deposits`, { amount: "5", reference: "a" })).status,
      201
    )

    await outage.down()
    const during = await admin("POST", `/admin/accounts/${account.id}/deposits`, { amount: "7", reference: "b" })
    assert.strictEqual(during.status, 503)
    assert.strictEqual((during.body.error as { code: string }).code, "store_unavailable")
    assert.strictEqual((await fetch(`${gateway.url}/readyz`)).status, 503)
    assert.strictEqual((await fetch(`${gateway.url}/healthz`)).status, 200)

    await outage.up()
    let after = { status: 0, body: {} as Record<string, unknown> }
    for (let attempt = 0; attempt < 20 && after.status !== 201; attempt++) {
      after = await admin("POST", `/admin/accounts/${account.id}/deposits`, { amount: "7", reference: "b" })
      if (after.status !== 201) await new Promise((resolve) => setTimeout(resolve, 250))
    }
    assert.strictEqual(after.status, 201)
    const shown = (await admin("GET", `/admin/accounts/${account.id}`)).body as { balance: { deposited: string } }
    assert.strictEqual(shown.balance.deposited, "12.000000")
    const ledger = (await admin("GET", `/admin/accounts/${account.id}/ledger`)).body as {
      data: Array<{ type: string }>
    }
    assert.deepStrictEqual(
      ledger.data.map((e) => e.type),
      ["AccountOpened", "FundsDeposited", "FundsDeposited"]
    )
    assert.isTrue((await admin("POST", "/admin/replay")).body.ok as boolean)
  }, 60_000)
})
