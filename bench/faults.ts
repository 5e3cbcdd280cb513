/**
 * Money under faults (issue 15): what one customer's poisoned request costs another, and what a `kill -9` leaves
 * unbilled. Both run the real gateway (`src/main.ts`) as a child process on a fresh database of a real Postgres.
 *
 *   npm run bench -- faults [--scenarios poison,kill] [--seconds 10] [--streams 16]
 *
 * - poison: eight other accounts run chat requests (half streamed) from 8 connections, first alone, then while an
 *   attacker submits videos whose `metadata.images` link holds a NUL or a lone surrogate, and while an operator
 *   script deposits amounts whose new total overflows 64 bits. Reported: the others' failures in each phase, what
 *   the attacker was charged, and how many completed streams (anyone's) were left unbilled.
 * - kill: streams of 2,000 tokens (a few tokens per event, 50 ms apart: about 25 s) are read for 8 s; the gateway is killed with SIGKILL and restarted on
 *   the same database; once no hold is pending, the output tokens each stream delivered (counted by the client with
 *   the gateway's tokenizer) are compared with what its hold was charged for.
 *
 * Postgres: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres); a database is created for the
 * run and dropped after. Nothing here is timed against a target: the figures go into the closing note.
 */
import { execFileSync } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { startSimulator } from "../src/adapters/simulator/SimulatorServer.ts"
import { countText } from "../src/adapters/tokenizer/Tokenizer.ts"
import { recordStream } from "../test/support/Sse.ts"
import { freePort, type Spawned, spawnNode, waitFor } from "./suite/Processes.ts"
import { benchOptions } from "./Options.ts"

const { option, number } = benchOptions("faults")
const scenarios = new Set((option("scenarios") ?? "poison,kill").split(","))
const seconds = number("seconds", 10)
const streamCount = number("streams", 16)
const adminToken = `tga_bench_${randomBytes(16).toString("hex")}`
const runDir = mkdtempSync(join(tmpdir(), "tollgate-faults-"))
const postgresBase = process.env.BENCH_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres"
const databases = new Set<string>()

const psql = (url: string, sql: string) =>
  execFileSync("psql", [url, "-v", "ON_ERROR_STOP=1", "-qAtc", sql], { encoding: "utf8" }).trim()

process.on("exit", () => {
  rmSync(runDir, { recursive: true, force: true })
  for (const database of databases) {
    try {
      psql(postgresBase, `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    } catch {
      // reported by the run that created it
    }
  }
})

const freshDatabase = (name: string) => {
  const database = `tollgate_faults_${name}_${randomBytes(4).toString("hex")}`
  psql(postgresBase, `CREATE DATABASE ${database}`)
  databases.add(database)
  const url = new URL(postgresBase)
  url.pathname = `/${database}`
  return url.toString()
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const startGateway = async (databaseUrl: string, configPath: string | undefined, logName: string) => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const gateway = spawnNode(join(import.meta.dirname, "../src/main.ts"), {
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      DATABASE_URL: databaseUrl,
      TOLLGATE_ADMIN_TOKEN: adminToken,
      TOLLGATE_DATA_DIR: join(runDir, logName),
      ...(configPath === undefined ? {} : { TOLLGATE_CONFIG: configPath })
    },
    logFile: join(runDir, `${logName}.log`),
    core: 0
  })
  await waitFor(
    (signal) => fetch(`${origin}/readyz`, { signal }).then((r) => r.status === 200),
    90,
    `gateway (${logName})`
  )
  return { origin, process: gateway }
}

const admin = async (origin: string, path: string, body?: unknown) => {
  const response = await fetch(`${origin}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  return { status: response.status, body: text.length > 0 ? (JSON.parse(text) as Record<string, unknown>) : {} }
}

const account = async (origin: string, name: string, amount: string) => {
  const opened = await admin(origin, "/admin/accounts", { name })
  const id = String(opened.body.id)
  await admin(origin, `/admin/accounts/${id}/deposits`, { amount, reference: `bench-${name}` })
  const key = String((await admin(origin, `/admin/accounts/${id}/keys`, { name: `${name}-key` })).body.key)
  return { id, key }
}

interface Outcome {
  readonly key: string
  readonly ok: boolean
  readonly status: number
  readonly requestId: string | null
  readonly streamed: boolean
}

/** One chat request; a stream counts as ok only when it ended with `[DONE]`. */
const chat = async (origin: string, key: string, model: string, stream: boolean): Promise<Outcome> => {
  try {
    const response = await fetch(`${origin}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model,
        messages: [{ role: "user", content: "Hello there, how are you today?" }],
        max_tokens: 32,
        ...(stream ? { stream: true } : {})
      }),
      signal: AbortSignal.timeout(30_000)
    })
    const text = await response.text()
    const ok = response.status === 200 && (!stream || text.trimEnd().endsWith("data: [DONE]"))
    return { key, ok, status: response.status, requestId: response.headers.get("x-request-id"), streamed: stream }
  } catch {
    return { key, ok: false, status: 0, requestId: null, streamed: stream }
  }
}

/** `connections` loops of `task` until `deadline`; loop `c` makes calls `c`, `c + connections`, … */
const loops = async <A>(connections: number, deadline: number, task: (i: number) => Promise<A>) => {
  const results: Array<A> = []
  await Promise.all(
    Array.from({ length: connections }, async (_, c) => {
      for (let i = c; Date.now() < deadline; i += connections) results.push(await task(i))
    })
  )
  return results
}

const summary = (outcomes: ReadonlyArray<Outcome>) => {
  const failed = outcomes.filter((o) => !o.ok)
  const statuses = new Map<number, number>()
  for (const o of failed) statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1)
  const keys = [...new Set(outcomes.map((o) => o.key))]
  const shareOf = (key: string) => {
    const own = outcomes.filter((o) => o.key === key)
    return own.filter((o) => !o.ok).length / own.length
  }
  return {
    requests: outcomes.length,
    failed: failed.length,
    failedShare: outcomes.length === 0 ? 0 : failed.length / outcomes.length,
    failedStatuses: Object.fromEntries(statuses),
    accounts: keys.length,
    accountsWithFailures: keys.filter((k) => shareOf(k) > 0).length,
    worstAccountFailedShare: Math.max(0, ...keys.map(shareOf))
  }
}

const report: Record<string, unknown> = { date: new Date().toISOString(), load: loadavg() }

// --- poison ------------------------------------------------------------------------------------------------------
if (scenarios.has("poison")) {
  const databaseUrl = freshDatabase("poison")
  const gateway = await startGateway(databaseUrl, undefined, "poison")
  // Eight other customers, one per connection: accounts hash to the ledger's writer shards, so some share the
  // attacker's and some do not.
  const victims = await Promise.all(Array.from({ length: 8 }, (_, i) => account(gateway.origin, `victim-${i}`, "1000")))
  const attacker = await account(gateway.origin, "attacker", "10")
  const operatorAccount = await account(gateway.origin, "operator-target", "1")
  const victimTraffic = (deadline: number) =>
    loops(8, deadline, (i) => chat(gateway.origin, (victims[i % 8] as { key: string }).key, "sim-openai", i % 2 === 0))

  const alone = summary(await victimTraffic(Date.now() + seconds * 1000))

  const poisons = ["https://example.com/a\u0000b.jpg", "https://example.com/a\ud800b.jpg"]
  const attackerCalls = { videos: [] as Array<number>, streams: [] as Array<Outcome>, deposits: [] as Array<number> }
  const deadline = Date.now() + seconds * 1000
  const [underAttack] = await Promise.all([
    victimTraffic(deadline),
    loops(2, deadline, async (i) => {
      const response = await fetch(`${gateway.origin}/v1/videos`, {
        method: "POST",
        headers: { authorization: `Bearer ${attacker.key}`, "content-type": "application/json" },
        body: JSON.stringify({
          model: "video-model-2.0-fast",
          prompt: "a cat",
          seconds: "4",
          metadata: { images: [poisons[i % 2]] }
        })
      }).catch(() => undefined)
      await response?.text()
      attackerCalls.videos.push(response?.status ?? 0)
    }),
    // The attacker's own streams, finishing inside the poisoned batches.
    loops(2, deadline, async () =>
      attackerCalls.streams.push(await chat(gateway.origin, attacker.key, "sim-openai", true))
    ),
    // The operator's mistake: deposits whose new total overflows the 64-bit balance columns.
    loops(1, deadline, async (i) => {
      const result = await admin(gateway.origin, `/admin/accounts/${operatorAccount.id}/deposits`, {
        amount: "9223372036854.775807",
        reference: `overflow-${i}`
      })
      attackerCalls.deposits.push(result.status)
    })
  ])
  await sleep(2000)
  const completed = [...underAttack, ...attackerCalls.streams].filter((o) => o.ok && o.streamed && o.requestId !== null)
  const ids = completed.map((o) => `'${o.requestId}'`).join(",")
  const unbilled =
    ids.length === 0
      ? 0
      : Number(
          psql(databaseUrl, `SELECT count(*) FROM holds WHERE request_id IN (${ids}) AND status <> 'settled'`) || "0"
        )
  const attackerBalance = await admin(gateway.origin, `/admin/accounts/${attacker.id}`)
  const countStatuses = (statuses: ReadonlyArray<number>) =>
    Object.fromEntries([...new Set(statuses)].map((s) => [s, statuses.filter((t) => t === s).length]))
  report.poison = {
    victimAlone: alone,
    victimUnderAttack: summary(underAttack),
    attackerVideoStatuses: countStatuses(attackerCalls.videos),
    overflowDepositStatuses: countStatuses(attackerCalls.deposits),
    attackerStreams: summary(attackerCalls.streams),
    completedStreams: completed.length,
    completedStreamsUnbilled: unbilled,
    attackerAccount: attackerBalance.body
  }
  console.log(JSON.stringify({ poison: report.poison }, null, 2))
  await gateway.process.stop()
}

// --- kill -9 -----------------------------------------------------------------------------------------------------
if (scenarios.has("kill")) {
  const sim = await startSimulator({ faults: { chunkDelayMs: 50 }, replyTokens: 2000 })
  const databaseUrl = freshDatabase("kill")
  const configPath = join(runDir, "kill.yaml")
  writeFileSync(
    configPath,
    `upstreams:
  sim-openai: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "${sim.apiKey}", timeoutMs: 60000 }
models:
  - { id: slow, plugin: text, upstreams: [sim-openai], upstreamModel: sim-openai, pricing: { input: "1.00", output: "10.00" }, maxOutputTokens: 4000 }
ledger: { holdTtlSeconds: 30 }
`
  )
  let gateway: { origin: string; process: Spawned } = await startGateway(databaseUrl, configPath, "kill-1")
  const customer = await account(gateway.origin, "streamer", "1000")
  const delivered = new Map<string, string>()
  const readers = Array.from({ length: streamCount }, () =>
    recordStream(gateway.origin, customer.key, "slow", delivered)
  )
  await sleep(8000)
  const killedAt = Date.now()
  gateway.process.child.kill("SIGKILL")
  await Promise.all(readers)
  gateway = await startGateway(databaseUrl, configPath, "kill-2")
  let pending = -1
  for (let i = 0; i < 600; i++) {
    pending = Number(psql(databaseUrl, "SELECT count(*) FROM holds WHERE status = 'pending'"))
    if (pending === 0) break
    await sleep(500)
  }
  const resolvedAfterSeconds = (Date.now() - killedAt) / 1000
  const rows = psql(
    databaseUrl,
    `SELECT h.request_id || ' ' || h.status || ' ' || coalesce((
       SELECT e.data->'usage'->>'outputTokens' FROM events e
       WHERE e.event_type = 'UsageRecalculated' AND e.data->>'holdId' = h.hold_id::text), '0')
     FROM holds h`
  )
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => line.split(" "))
  let deliveredTokens = 0
  let billedTokens = 0
  let worst = 0
  const perStream: Array<{ delivered: number; billed: number; status: string }> = []
  for (const [requestId, status, billed] of rows) {
    const tokens = countText(delivered.get(requestId as string) ?? "")
    deliveredTokens += tokens
    billedTokens += Number(billed)
    worst = Math.max(worst, tokens - Number(billed))
    perStream.push({ delivered: tokens, billed: Number(billed), status: status as string })
  }
  report.kill = {
    streams: streamCount,
    pendingAfterRecovery: pending,
    resolvedAfterSeconds,
    deliveredOutputTokens: deliveredTokens,
    billedOutputTokens: billedTokens,
    unbilledOutputTokens: deliveredTokens - billedTokens,
    worstStreamUnbilledTokens: worst,
    deliveredTokensPerSecondPerStream: Math.round(deliveredTokens / streamCount / 8),
    perStream
  }
  console.log(JSON.stringify({ kill: report.kill }, null, 2))
  await gateway.process.stop()
  await sim.close()
}

report.loadAfter = loadavg()
console.log(JSON.stringify({ load: { before: report.load, after: report.loadAfter } }))
process.exit(0)
