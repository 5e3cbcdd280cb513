/**
 * `tollgate audit verify` and `tollgate replay --verify | --apply` against a real gateway on a real Postgres: the
 * replay reports its progress page by page, apply rebuilds in place, and an event edited directly in SQL is named
 * by the audit with exit 1.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { ProgressOutput } from "../../src/cli/commands/VideosProgress.ts"
import { runCli } from "../../src/cli/runCli.ts"
import { createPostgresDatabase, runPostgres } from "../support/TestDatabase.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const baseUrl = process.env.TEST_DATABASE_URL

describe.skipIf(baseUrl === undefined || baseUrl === "")("tollgate audit and replay on Postgres", () => {
  let database: { readonly url: string; drop(): Promise<void> }
  let gateway: TestGateway

  beforeAll(async () => {
    database = await createPostgresDatabase(baseUrl as string)
    gateway = await startTestGateway({
      database: { kind: "postgres", url: Redacted.make(database.url) },
      video: { enabled: false }
    })
  }, 60_000)
  afterAll(async () => {
    await gateway?.close()
    await database?.drop()
  })

  const tollgate = (argv: ReadonlyArray<string>) => {
    const progress: Array<string> = []
    return runCli(argv, { TOLLGATE_URL: gateway.url, TOLLGATE_ADMIN_TOKEN: gateway.adminToken }).pipe(
      Effect.provideService(ProgressOutput, { write: (chunk: string) => progress.push(chunk), isTTY: false }),
      Effect.map((result) => ({ ...result, progress: progress.join("") })),
      Effect.runPromise
    )
  }

  it("verifies, rebuilds with progress, and names an edited event", { timeout: 120_000 }, async () => {
    const account = JSON.parse((await tollgate(["accounts", "create", "Audit Co", "--json"])).stdout)
    for (let i = 0; i < 5; i++) {
      const deposit = await tollgate(["deposit", account.id, "1.00", "--reference", `inv-${i}`])
      assert.strictEqual(deposit.exitCode, 0, deposit.stderr)
    }

    const intact = await tollgate(["audit", "verify"])
    assert.strictEqual(intact.exitCode, 0, intact.stderr)
    assert.match(intact.stdout, /^intact: \d+ events in \d+ streams verified/)

    const verified = await tollgate(["replay", "--verify"])
    assert.strictEqual(verified.exitCode, 0, verified.stderr)
    assert.match(verified.stdout, /^Replay verified/)
    // The non-terminal display: one line per change, the last at the snapshot's total.
    const lines = verified.progress.trim().split("\n")
    const last = lines[lines.length - 1]
    const [, done, total] = /replaying {2}([\d,]+) \/ ([\d,]+) events {2}100%/.exec(last) ?? []
    assert.isDefined(done, verified.progress)
    assert.strictEqual(done, total)

    // A projection row edited behind the ledger's back: verify reports it, apply repairs it from the events.
    await runPostgres(database.url, `UPDATE accounts SET deposited = deposited + 1 WHERE id = '${account.id}'`)
    const mismatch = await tollgate(["replay", "--verify"])
    assert.strictEqual(mismatch.exitCode, 1)
    assert.include(mismatch.stderr, "replay verification failed: 1 mismatch")
    const applied = await tollgate(["replay", "--apply", "--json"])
    assert.strictEqual(applied.exitCode, 0, applied.stderr)
    assert.strictEqual(JSON.parse(applied.stdout).repaired.accounts.written, 1)
    assert.match(applied.progress, /rebuilding {2}[\d,]+ \/ [\d,]+ events {2}100%/)
    assert.strictEqual((await tollgate(["replay", "--verify"])).exitCode, 0)

    // An event edited directly in SQL breaks its stream's hash chain.
    const [event] = (await runPostgres(
      database.url,
      `SELECT global_position::text AS g, stream_position::text AS p FROM events
       WHERE stream_name = 'account-${account.id}' AND event_type = 'FundsDeposited' ORDER BY stream_position LIMIT 1`
    )) as unknown as ReadonlyArray<{ g: string; p: string }>
    await runPostgres(
      database.url,
      `UPDATE events SET data = jsonb_set(data, '{amount}', '"99000000"') WHERE global_position = ${event.g}`
    )
    const broken = await tollgate(["audit", "verify"])
    assert.strictEqual(broken.exitCode, 1)
    assert.include(broken.stdout, `BROKEN: hash_mismatch at account-${account.id} position ${event.p}`)
    assert.include(broken.stdout, `(global position ${event.g})`)
    assert.include(broken.stderr, "audit verification failed")
  })
})
