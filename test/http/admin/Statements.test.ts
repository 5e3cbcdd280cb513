import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../../src/adapters/store/Database.ts"
import { defaultLedgerOptions, Ledger } from "../../../src/app/Ledger.ts"
import * as PgLedgerWriter from "../../../src/adapters/store/PgLedgerWriter.ts"
import { parseDecimal } from "../../../src/domain/Money.ts"
import { type ChatHarness, closeAfterReplay, startChatHarness } from "../chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"

const micros = (text: string): bigint => {
  const negative = text.startsWith("-")
  const value = parseDecimal(text.replace(/^[+-]/, "")) as bigint
  return negative ? -value : value
}

interface Figures {
  readonly balance: string
  readonly held: string
  readonly available: string
}

const sum = (opening: Figures, deltas: ReadonlyArray<Figures>, field: keyof Figures) =>
  deltas.reduce((total, delta) => total + micros(delta[field]), micros(opening[field]))

let h: ChatHarness

beforeAll(async () => {
  h = await startChatHarness()
})
afterAll(() => closeAfterReplay(h))

const chat = (key: string, content: string) =>
  fetch(`${h.gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "sim-openai", messages: [{ role: "user", content }], max_tokens: 64 })
  })

const get = (path: string) =>
  fetch(`${h.gateway.url}${path}`, { headers: { authorization: `Bearer ${h.gateway.adminToken}` } })

describe("GET /admin/accounts/{id}/statement", () => {
  it("after real chat calls: opening + Σ delta = closing, entries name the hold's model, CSV sums to the closing", async () => {
    const customer = await h.admin.customer({ deposit: "5" })
    for (const content of ["hello", "tell me a story", "what is 2+2"]) {
      const response = await chat(customer.key, content)
      assert.strictEqual(response.status, 200, await response.clone().text())
      await response.text()
    }
    const live = await h.admin.balance(customer.accountId)

    const full = await get(`/admin/accounts/${customer.accountId}/statement`)
    assert.strictEqual(full.status, 200)
    const statement = await full.json()
    assert.strictEqual(statement.accountId, customer.accountId)
    assert.deepStrictEqual(statement.opening, { balance: "0.000000", held: "0.000000", available: "0.000000" })
    assert.strictEqual(micros(statement.closing.balance), micros(live.deposited) - micros(live.captured))
    assert.strictEqual(statement.closing.held, live.held)
    assert.strictEqual(statement.closing.available, live.available)
    for (const field of ["balance", "held", "available"] as const) {
      const deltas = statement.entries.map((e: { delta: Figures }) => e.delta)
      assert.strictEqual(sum(statement.opening, deltas, field), micros(statement.closing[field]))
    }
    const types = statement.entries.map((e: { type: string }) => e.type)
    assert.deepStrictEqual(types.slice(0, 2), ["AccountOpened", "FundsDeposited"])
    assert.strictEqual(types.filter((t: string) => t === "HoldPlaced").length, 3)
    const usage = statement.entries.find((e: { type: string }) => e.type === "UsageRecalculated")
    assert.strictEqual(usage.model, "sim-openai")
    assert.strictEqual(usage.keyId, customer.keyId)
    assert.isNotNull(usage.plugin)
    assert.isNotNull(usage.usage)
    assert.match(usage.delta.balance, /^-\d+\.\d{6}$/)
    const refund = statement.entries.find((e: { type: string }) => e.type === "RefundIssued")
    assert.strictEqual(refund.model, "sim-openai")
    assert.match(refund.delta.available, /^\+\d+\.\d{6}$/)

    // A middle range by global position, and the point-in-time balance at its end.
    const entries = statement.entries as ReadonlyArray<{ position: number; delta: Figures }>
    const from = entries[3].position
    const to = entries[entries.length - 2].position
    const middle = await (await get(`/admin/accounts/${customer.accountId}/statement?from=${from}&to=${to}`)).json()
    assert.strictEqual(middle.entries.length, entries.length - 4)
    for (const field of ["balance", "held", "available"] as const) {
      const deltas = middle.entries.map((e: { delta: Figures }) => e.delta)
      assert.strictEqual(sum(middle.opening, deltas, field), micros(middle.closing[field]))
    }
    const asOf = await (await get(`/admin/accounts/${customer.accountId}?asOf=${to}`)).json()
    assert.strictEqual(asOf.id, customer.accountId)
    assert.strictEqual(asOf.balance.held, middle.closing.held)
    assert.strictEqual(asOf.balance.available, middle.closing.available)
    assert.strictEqual(micros(asOf.balance.deposited) - micros(asOf.balance.captured), micros(middle.closing.balance))
    const now = await (
      await get(`/admin/accounts/${customer.accountId}?asOf=${new Date(Date.now() + 60_000).toISOString()}`)
    ).json()
    assert.deepStrictEqual(now.balance, live)

    // CSV: parse it back; the balance column sums from the opening to the closing.
    const csv = await get(`/admin/accounts/${customer.accountId}/statement?format=csv`)
    assert.strictEqual(csv.status, 200)
    assert.strictEqual(csv.headers.get("content-type"), "text/csv; charset=utf-8")
    const lines = (await csv.text()).trimEnd().split("\r\n")
    const header = lines[0].split(",")
    assert.deepStrictEqual(header.slice(-3), ["deltaBalance", "deltaHeld", "deltaAvailable"])
    assert.strictEqual(lines.length - 1, statement.entries.length)
    const column = header.indexOf("deltaBalance")
    // The last three fields never need quoting, so they are the last three comma-separated values.
    const total = lines.slice(1).reduce((acc, line) => {
      const fields = line.split(",")
      return acc + micros(fields[fields.length - (header.length - column)])
    }, 0n)
    assert.strictEqual(total, micros(statement.closing.balance))
  })

  it("unknown account → 404; a bad bound → 400 naming it; before the account existed → 404", async () => {
    const customer = await h.admin.customer({ deposit: "1" })
    const unknown = await get("/admin/accounts/00000000-0000-4000-8000-000000000000/statement")
    assert.strictEqual(unknown.status, 404)
    assert.strictEqual((await unknown.json()).error.code, "account_not_found")
    for (const param of ["from", "to"]) {
      const bad = await get(`/admin/accounts/${customer.accountId}/statement?${param}=yesterday`)
      assert.strictEqual(bad.status, 400)
      const body = await bad.json()
      assert.strictEqual(body.error.param, param)
      assert.strictEqual(body.error.type, "invalid_request_error")
    }
    const badAsOf = await get(`/admin/accounts/${customer.accountId}?asOf=soon`)
    assert.strictEqual(badAsOf.status, 400)
    assert.strictEqual((await badAsOf.json()).error.param, "asOf")
    const early = await get(`/admin/accounts/${customer.accountId}?asOf=2000-01-01T00:00:00Z`)
    assert.strictEqual(early.status, 404)
    const unauthorized = await fetch(`${h.gateway.url}/admin/accounts/${customer.accountId}/statement`)
    assert.strictEqual(unauthorized.status, 401)
  })
})

describe("a statement of 20,000 events", () => {
  let gateway: TestGateway | undefined
  let dir: string | undefined
  let accountId = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-statement-"))
    const database = { kind: "pglite", dataDir: dir } as const
    // Written straight through the Ledger, then served by a gateway over the same data directory.
    accountId = await Effect.runPromise(
      Effect.gen(function* () {
        const ledger = yield* Ledger
        const account = yield* ledger.openAccount("bulk")
        yield* Effect.forEach(
          Array.from({ length: 20_000 }, (_, i) => i),
          (i) => ledger.deposit(account.id, 1n, `d${i}`),
          { concurrency: 256, discard: true }
        )
        return account.id
      }).pipe(
        Effect.provide(
          PgLedgerWriter.layerWith({ ...defaultLedgerOptions, shards: 1, sweepIntervalMillis: 3_600_000 }).pipe(
            Layer.provideMerge(Database.layer(database))
          )
        )
      )
    )
    gateway = await startTestGateway({ database })
  }, 180_000)
  afterAll(async () => {
    await gateway?.close()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("streams as CSV: chunked, in many pieces, complete", async () => {
    const response = await fetch(`${gateway?.url}/admin/accounts/${accountId}/statement?format=csv`, {
      headers: { authorization: `Bearer ${gateway?.adminToken}` }
    })
    assert.strictEqual(response.status, 200)
    assert.strictEqual(response.headers.get("transfer-encoding"), "chunked")
    assert.isNull(response.headers.get("content-length"))
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let chunks = 0
    let text = ""
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      chunks += 1
      text += decoder.decode(value, { stream: true })
    }
    assert.isAbove(chunks, 5)
    const lines = text.trimEnd().split("\r\n")
    assert.strictEqual(lines.length, 1 + 20_001)
    const total = lines.slice(2).reduce((acc, line) => acc + micros(line.split(",").at(-3) as string), 0n)
    assert.strictEqual(total, 20_000n)
  }, 120_000)
})
