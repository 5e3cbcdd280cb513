/**
 * The database restarted under load. A Postgres cluster of this test's own (initdb into a temporary directory, on a
 * port of its own, so the suites running beside it keep their server) serves a gateway while eight clients send chat
 * requests without pause; the cluster is stopped (fast shutdown: every connection killed) and started again. While it
 * is down requests fail with 503 and nothing is charged; after it is back they succeed without the gateway being
 * touched; once the holds of requests cut mid-flight expire, every hold is resolved exactly once, and replay and the
 * audit are clean. Needs root (to run the cluster as the `postgres` user) and the Debian Postgres binaries; skipped
 * with a line saying so elsewhere.
 */
import { freePort } from "../support/Ports.ts"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import { execFileSync } from "node:child_process"
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { makeAdmin } from "../http/chat/ChatHarness.ts"
import { startTestGateway, type TestGateway } from "../support/TestGateway.ts"

const pgBin = (() => {
  const root = "/usr/lib/postgresql"
  if (!existsSync(root)) return undefined
  const version = readdirSync(root).sort().at(-1)
  return version === undefined ? undefined : join(root, version, "bin")
})()
const postgresUid = (() => {
  try {
    return Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim())
  } catch {
    return undefined
  }
})()
const canRun = process.getuid?.() === 0 && pgBin !== undefined && postgresUid !== undefined
if (!canRun) console.warn("[tollgate] no root or no Postgres binaries: the Postgres restart suite is skipped")

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!canRun)("Postgres restarted under load", () => {
  let dir: string
  let port: number
  let gateway: TestGateway | undefined
  const asPostgres = (tool: string, args: ReadonlyArray<string>) =>
    execFileSync("runuser", ["-u", "postgres", "--", join(pgBin as string, tool), ...args], {
      stdio: "pipe",
      timeout: 60_000
    })
  const pgCtl = (action: "start" | "stop") =>
    asPostgres("pg_ctl", [
      "-D",
      join(dir, "data"),
      "-l",
      join(dir, "log"),
      "-w",
      ...(action === "stop" ? ["-m", "fast"] : ["-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`]),
      action
    ])

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tollgate-pgrestart-"))
    chownSync(dir, postgresUid as number, postgresUid as number)
    asPostgres("initdb", ["-D", join(dir, "data"), "-A", "trust", "-U", "postgres", "--no-sync"])
    port = await freePort()
    pgCtl("start")
    gateway = await startTestGateway({
      database: { kind: "postgres", url: Redacted.make(`postgres://postgres@127.0.0.1:${port}/postgres`) },
      video: { enabled: false },
      // Requests cut mid-flight leave holds; they expire in 2 s and the sweep runs every 500 ms.
      ledger: { holdTtlSeconds: 2, sweepIntervalMillis: 500 }
    })
  }, 120_000)

  afterAll(async () => {
    await gateway?.close()
    try {
      pgCtl("stop")
    } catch {
      // already stopped
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("503 while it is down, nothing partial, service back by itself", { timeout: 180_000 }, async () => {
    const live = gateway as TestGateway
    const admin = makeAdmin(live)
    const customer = await admin.customer({ deposit: "50" })
    const statuses: Array<{ readonly phase: string; readonly status: number }> = []
    let phase = "before"
    let running = true
    const client = async () => {
      while (running) {
        const answer = await fetch(`${live.url}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${customer.key}`, "content-type": "application/json" },
          body: JSON.stringify({ model: "sim-openai", max_tokens: 16, messages: [{ role: "user", content: "Hi" }] }),
          signal: AbortSignal.timeout(20_000)
        }).then(
          async (response) => {
            await response.text()
            return response.status
          },
          () => 0
        )
        statuses.push({ phase, status: answer })
        if (answer !== 200) await sleep(20)
      }
    }
    const clients = Array.from({ length: 8 }, client)
    await sleep(1_500)
    phase = "down"
    pgCtl("stop")
    await sleep(2_000)
    phase = "restarting"
    pgCtl("start")
    phase = "after"
    await sleep(3_000)
    running = false
    await Promise.all(clients)

    const of = (name: string) => statuses.filter((s) => s.phase === name).map((s) => s.status)
    assert.isAbove(of("before").filter((s) => s === 200).length, 0, "requests succeeded before the restart")
    assert.include(of("down"), 503, `while down: ${[...new Set(of("down"))].join(", ")}`)
    assert.isAbove(of("after").filter((s) => s === 200).length, 0, `after: ${[...new Set(of("after"))].join(", ")}`)
    // Only successes and the store's own refusal: no 500, no hung request.
    for (const { phase: when, status } of statuses) assert.include([200, 503], status, `${when}: ${status}`)

    // Holds of requests cut mid-flight expire; then every hold is resolved exactly once.
    let balance = await admin.balance(customer.accountId)
    for (let i = 0; i < 200 && balance.held !== "0.000000"; i++) {
      await sleep(100)
      balance = await admin.balance(customer.accountId)
    }
    assert.strictEqual(balance.held, "0.000000")
    const entries = await admin.ledger(customer.accountId)
    const holds = entries.filter((e) => e.type === "HoldPlaced")
    for (const hold of holds) {
      const resolutions = entries.filter(
        (e) => e.holdId === hold.holdId && (e.type === "UsageRecalculated" || e.type === "RefundIssued")
      )
      assert.isAtLeast(resolutions.length, 1, `hold ${hold.holdId} unresolved`)
      assert.isAtMost(entries.filter((e) => e.holdId === hold.holdId && e.type === "UsageRecalculated").length, 1)
    }
    const settled = entries.filter((e) => e.type === "UsageRecalculated").length
    assert.strictEqual(settled, statuses.filter((s) => s.status === 200).length)
    const replay = await admin.call("POST", "/admin/replay")
    assert.isTrue(replay.body.ok, JSON.stringify(replay.body.mismatches))
    const audit = await admin.call("POST", "/admin/audit/verify")
    assert.isTrue(audit.body.ok, JSON.stringify(audit.body.firstBroken))
    console.info(
      `postgres restart: ${statuses.length} requests, ${settled} settled, ${of("down").filter((s) => s === 503).length} refused with 503 while down, ${holds.length} holds resolved once`
    )
  })
})
