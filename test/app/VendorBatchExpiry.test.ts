/**
 * A client batch whose lines are out at a vendor when its 24-hour window passes (TestClock on the embedded store, the
 * worker's loop off, each round `runDue` by hand): it ends `expired`, cancels the vendor's batch, and releases every
 * line's hold — nothing billed for lines whose results never came back.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { SqlClient } from "effect/sql"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { Batches } from "../../src/app/batch/Batches.ts"
import { batchCustomer, chatLine, clockMovedServices, submitWithKey } from "./BatchClockHarness.ts"

const line = chatLine("vendor-openai")

// A vendor whose batches take an hour of real time: they are still out when the gateway's clock passes a day.
const simulator = Effect.acquireRelease(
  Effect.promise(() => startSimulator({ batchMillis: 3_600_000 })),
  (sim) => Effect.promise(() => sim.close())
)

const services = (simUrl: string) => {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-vendor-expiry-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `upstreams:
  vb: { protocol: openai, baseUrl: "${simUrl}/v1", apiKey: "sk-sim-test-key", batch: true }
models:
  - { id: vendor-openai, plugin: text, upstreams: [vb], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
`
  )
  return clockMovedServices({ configPath, batches: { vendorPollMillis: 1 } })
}

describe("vendor batch expiry", () => {
  it.live(
    "ends expired, cancels the vendor's batch and releases every held line",
    () =>
      Effect.gen(function* () {
        const sim = yield* simulator
        yield* Effect.gen(function* () {
          const batches = yield* Batches
          const { accountId, key } = yield* batchCustomer
          const file = yield* batches.createFile(accountId, {
            purpose: "batch",
            filename: "in.jsonl",
            content: [0, 1, 2].map(line).join("\n")
          })
          const submitted = yield* submitWithKey(key, file.id)
          yield* batches.runDue
          const posts = (path: RegExp) => sim.calls().filter((c) => c.method === "POST" && path.test(c.path)).length
          assert.strictEqual(posts(/^\/v1\/batches$/), 1)
          const sql = yield* SqlClient.SqlClient
          const holds = sql<{ status: string }>`SELECT status FROM holds WHERE account_id = ${accountId}::uuid`
          assert.deepStrictEqual(
            (yield* holds).map((h) => h.status),
            ["pending", "pending", "pending"]
          )

          yield* TestClock.adjust("25 hours")
          yield* batches.runDue
          const expired = yield* batches.get(accountId, submitted.id)
          assert.strictEqual(expired.status, "expired")
          assert.deepStrictEqual([expired.total, expired.completed, expired.failed], [3, 0, 3])
          assert.strictEqual(posts(/^\/v1\/batches\/[^/]+\/cancel$/), 1)
          assert.deepStrictEqual(
            (yield* holds).map((h) => h.status),
            ["released", "released", "released"]
          )
        }).pipe(Effect.provide(services(sim.baseUrl)), Effect.provide(TestClock.layer()))
      }).pipe(Effect.scoped),
    30_000
  )
})
