/**
 * A gateway as a child process — the bundle `npm start` runs, built once per test run (childGateway.global.ts), or
 * `node --import tsx src/main.ts` outside vitest — for the suites that kill it with SIGKILL or restart
 * it on the same database, with the admin calls and ledger checks they share. Every output of the child is checked
 * for secrets when it is killed.
 */
import { assert } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { join } from "node:path"
import { inject } from "vitest"

export const ADMIN_TOKEN = "tga_kill_test_0123456789abcdef0123456789abcdef"

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export interface Gateway {
  readonly url: string
  readonly child: ChildProcess
  readonly output: () => string
}

/** What a child gateway is started with: its database, this file's admin token, its config, data and content under `dir`. */
export const childEnv = (databaseUrl: string, configPath: string, dir: string): Record<string, string> => ({
  DATABASE_URL: databaseUrl,
  TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
  TOLLGATE_CONFIG: configPath,
  TOLLGATE_DATA_DIR: join(dir, "data"),
  TOLLGATE_CONTENT_DIR: join(dir, "content")
})

/** How to run the gateway: the run's bundle when vitest built one, else its TypeScript entry through tsx. */
export const gatewayArgs = (): ReadonlyArray<string> => {
  let bundle: string | undefined
  try {
    bundle = inject("childGateway")
  } catch {
    bundle = undefined
  }
  return bundle === undefined ? ["--import", "tsx", "src/main.ts"] : [bundle]
}

export const startGateway = async (env: Record<string, string>, port: number): Promise<Gateway> => {
  const child = spawn(process.execPath, gatewayArgs(), {
    env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
  })
  const url = `http://127.0.0.1:${port}`
  // The port opens once the gateway's services are up (a loaded machine takes a minute to migrate a fresh store).
  for (const until = Date.now() + 180_000; Date.now() < until; ) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}):\n${output}`)
    const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.status === 200,
      () => false
    )
    if (ready) return { url, child, output: () => output }
    await sleep(100)
  }
  child.kill("SIGKILL")
  throw new Error(`the gateway did not become ready:\n${output}`)
}

const SECRET = /sk-[A-Za-z0-9]{40,}|tga_[A-Za-z0-9_]{30,}/

/** Kills the process; its whole output (logs of a run cut short included) must not carry a key or a token. */
export const killHard = async (gateway: Gateway): Promise<void> => {
  // Killed first: a failed check must not leave the process running past the test.
  await new Promise<void>((resolve) => {
    if (gateway.child.exitCode !== null || gateway.child.signalCode !== null) return resolve()
    gateway.child.once("exit", () => resolve())
    gateway.child.kill("SIGKILL")
  })
  assert.notMatch(gateway.output(), SECRET, "a secret in the gateway's output")
}

/** An admin call; `token` defaults to the token these child gateways are started with. */
export const admin = async (
  gateway: { readonly url: string },
  method: string,
  path: string,
  body?: unknown,
  token = ADMIN_TOKEN
) => {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await response.text()
  return { status: response.status, body: text.length > 0 ? JSON.parse(text) : null }
}

export interface Entry {
  readonly type: string
  readonly holdId: string | null
  readonly amount: string | null
  readonly model: string | null
  readonly requestId: string | null
  readonly data: Record<string, unknown>
}

export const ledgerOf = async (
  gateway: { readonly url: string },
  accountId: string,
  token = ADMIN_TOKEN
): Promise<ReadonlyArray<Entry>> => {
  const entries: Array<Entry> = []
  let after = 0
  for (;;) {
    const page = await admin(
      gateway,
      "GET",
      `/admin/accounts/${accountId}/ledger?after=${after}&limit=1000`,
      undefined,
      token
    )
    entries.push(...page.body.data)
    if (page.body.next === null) return entries
    after = page.body.next
  }
}

/** Every hold resolved exactly once: one UsageRecalculated or one full-release RefundIssued, never both or two. */
export const assertEachHoldResolvedOnce = (entries: ReadonlyArray<Entry>) => {
  const holds = entries.filter((e) => e.type === "HoldPlaced")
  for (const hold of holds) {
    const usage = entries.filter((e) => e.holdId === hold.holdId && e.type === "UsageRecalculated").length
    const refunds = entries.filter((e) => e.holdId === hold.holdId && e.type === "RefundIssued").length
    assert.isAtMost(usage, 1, `hold ${hold.holdId} recalculated ${usage} times`)
    assert.isTrue(usage === 1 || refunds === 1, `hold ${hold.holdId}: ${usage} usage, ${refunds} refunds`)
    assert.isAtMost(refunds, 1, `hold ${hold.holdId} refunded ${refunds} times`)
  }
  return holds.length
}

export { readDeltas } from "./Sse.ts"

export interface Balance {
  readonly deposited: string
  readonly captured: string
  readonly held: string
}

/** The account's balance once `reached` holds of it (read every 100 ms), or as it is after `seconds`. */
const untilBalance = async (
  gateway: { readonly url: string },
  accountId: string,
  reached: (balance: Balance | undefined) => boolean,
  seconds: number,
  token: string
): Promise<Balance> => {
  const read = async () =>
    (await admin(gateway, "GET", `/admin/accounts/${accountId}`, undefined, token)).body?.balance as Balance | undefined
  let balance = await read().catch(() => undefined)
  for (let i = 0; i < seconds * 10 && !reached(balance); i++) {
    await sleep(100)
    balance = await read().catch(() => balance)
  }
  return balance as Balance
}

/**
 * The account's balance once nothing is held any more (a restarted gateway's sweep has resolved what the dead one
 * left, or deferred settlements have committed), or as it is after `seconds`.
 */
export const untilNothingHeld = (
  gateway: { readonly url: string },
  accountId: string,
  seconds = 40,
  token = ADMIN_TOKEN
): Promise<Balance> => untilBalance(gateway, accountId, (balance) => balance?.held === "0.000000", seconds, token)

/**
 * The account's balance once something is held (a call or a batch line in flight: between two of a batch's lines
 * nothing may be), or as it is after `seconds`.
 */
export const untilSomethingHeld = (
  gateway: { readonly url: string },
  accountId: string,
  seconds = 10,
  token = ADMIN_TOKEN
): Promise<Balance> =>
  untilBalance(gateway, accountId, (balance) => balance !== undefined && balance.held !== "0.000000", seconds, token)
