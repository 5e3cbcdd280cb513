/** `tollgate statement` and `tollgate accounts show --as-of` against a real gateway. */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../../src/cli/runCli.ts"
import { makeAdmin } from "../http/chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

let gateway: TestGateway

beforeAll(async () => {
  gateway = await startTestGateway()
})
afterAll(() => gateway.close())

const tollgate = (argv: ReadonlyArray<string>) =>
  Effect.runPromise(runCli(argv, { TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_TOKEN: gateway.adminToken }))

describe("tollgate statement", () => {
  it("prints a table, CSV and JSON; accounts show --as-of gives the past balance; bad bounds fail", async () => {
    const admin = makeAdmin(gateway)
    const customer = await admin.customer({ deposit: "3" })
    const ledger = await admin.ledger(customer.accountId)
    const depositPosition = (ledger[1] as unknown as { globalPosition: number }).globalPosition
    await admin.call("POST", `/admin/accounts/${customer.accountId}/deposits`, { amount: "2", reference: "later" })

    const table = await tollgate(["statement", customer.accountId])
    assert.strictEqual(table.exitCode, 0, table.stderr)
    assert.include(table.stdout, "opening: balance 0.000000, held 0.000000, available 0.000000")
    assert.include(table.stdout, "closing: balance 5.000000, held 0.000000, available 5.000000")
    assert.include(table.stdout, "+3.000000")

    const csv = await tollgate(["statement", customer.accountId, "--csv", "--from", String(depositPosition)])
    assert.strictEqual(csv.exitCode, 0, csv.stderr)
    const lines = csv.stdout.trim().split(/\r?\n/)
    assert.match(lines[0], /^type,position,streamPosition/)
    assert.strictEqual(lines.length, 1 + 2)

    const json = await tollgate(["statement", customer.accountId, "--to", String(depositPosition), "--json"])
    assert.strictEqual(JSON.parse(json.stdout).closing.balance, "3.000000")

    const past = await tollgate(["accounts", "show", customer.accountId, "--as-of", String(depositPosition)])
    assert.strictEqual(past.exitCode, 0, past.stderr)
    assert.include(past.stdout, "3.000000")
    assert.notInclude(past.stdout, "5.000000")

    const bad = await tollgate(["statement", customer.accountId, "--from", "yesterday"])
    assert.strictEqual(bad.exitCode, 1)
    assert.include(bad.stderr, "from must be")
  })
})
