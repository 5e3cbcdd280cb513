/**
 * A database outage mid-batch (real Postgres, `TEST_DATABASE_URL`): the gateway loses its database while lines are in
 * flight upstream, so their results cannot commit; it comes back, and the batch completes at once — not after the
 * batch's lease (120 s, the default kept here) runs out — with every line held once, settled once, in the output once,
 * and the ledger agreeing with the output line by line. The outage is a TCP proxy that drops every connection
 * (test/support/Outage.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { freePort } from "../../support/Ports.ts"
import { type Outage, outageBefore } from "../../support/Outage.ts"
import { runPostgres } from "../../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { makeAdmin } from "../chat/ChatHarness.ts"
import { assertLineByLine, outputOf, submitChatBatch, untilCompleted, untilEnded } from "./BatchChecks.ts"

const baseUrl = process.env.TEST_DATABASE_URL
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(baseUrl === undefined || baseUrl === "")("a database outage mid-batch", () => {
  const dbName = `tollgate_batch_${randomUUID().replaceAll("-", "").slice(0, 12)}`
  let slow: RunningSimulator
  let dir: string
  let outage: Outage
  let gateway: TestGateway

  beforeAll(async () => {
    slow = await startSimulator({ faults: { latencyMs: 300 } })
    dir = mkdtempSync(join(tmpdir(), "tollgate-batch-outage-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(
      configPath,
      `
upstreams:
  slow: { protocol: openai, baseUrl: "${slow.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: slow-model, plugin: text, upstreams: [slow], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
`
    )
    await runPostgres(baseUrl as string, `CREATE DATABASE ${dbName}`)
    const direct = new URL(baseUrl as string)
    direct.pathname = `/${dbName}`
    const proxied = await outageBefore(direct.toString(), await freePort())
    outage = proxied.outage
    gateway = await startTestGateway({
      configPath,
      database: { kind: "postgres", url: Redacted.make(proxied.url), maxConnections: 4 },
      // The default lease (120 s): recovery must not wait for it.
      batches: { pollMillis: 100, concurrency: 4, chunk: 8 }
    })
  }, 60_000)

  afterAll(async () => {
    await gateway?.close()
    await outage?.down()
    await runPostgres(baseUrl as string, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`)
    await slow?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("completes once the database is back: nothing lost, nothing billed twice", async () => {
    const admin = makeAdmin(gateway)
    const customer = await admin.customer({ deposit: "10" })
    const { batchId, customIds } = await submitChatBatch(gateway.url, customer.key, "slow-model", 24)
    await untilCompleted(gateway.url, customer.key, batchId, 4, 10_000)
    // Lines are in flight upstream (300 ms each): their results come back to a database that is gone.
    await outage.down()
    await sleep(800)
    await outage.up()
    const began = Date.now()
    const batch = await untilEnded(gateway.url, customer.key, batchId, 15_000)
    console.info(`batch outage: completed ${Date.now() - began} ms after the database came back`)
    expect(batch?.status).toBe("completed")
    expect(batch?.request_counts).toEqual({ total: 24, completed: 24, failed: 0 })
    const output = await outputOf(gateway.url, customer.key, batch.output_file_id)
    assertLineByLine(output, customIds, await admin.ledger(customer.accountId), { input: 75_000n, output: 300_000n })
    expect((await admin.balance(customer.accountId)).held).toBe("0.000000")
    const replay = await admin.call("POST", "/admin/replay")
    expect(replay.body.ok, JSON.stringify(replay.body.mismatches)).toBe(true)
  }, 45_000)
})
