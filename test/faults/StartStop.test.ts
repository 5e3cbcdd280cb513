/**
 * Starting and stopping a gateway process (the bundle `npm start` runs, see test/support/ChildGateway.ts):
 * - while it starts (migrations on a fresh embedded database), every request is answered or its connection refused,
 *   never accepted and left hanging;
 * - on SIGTERM, a stream in flight is served to its end and settled, then the process exits;
 * - a stream longer than `TOLLGATE_SHUTDOWN_GRACE_SECONDS` is cut when the grace ends, settled for what it delivered,
 *   and the process exits within the grace (plus the time its services take to close), not whenever the client goes.
 */
import { afterAll, beforeAll, describe, it } from "@effect/vitest"
import { assert } from "@effect/vitest"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import {
  gatewayArgs,
  ADMIN_TOKEN,
  admin,
  assertEachHoldResolvedOnce,
  type Gateway,
  killHard,
  ledgerOf,
  readDeltas,
  sleep,
  startGateway
} from "../support/ChildGateway.ts"
import { freePort } from "../support/Ports.ts"

let sim: RunningSimulator
let longSim: RunningSimulator
let dir: string
let configPath: string
const running: Array<Gateway> = []

beforeAll(async () => {
  // Streams of ~40 events 50 ms apart (about 2 s), and long ones: 2,000 tokens, 40 ms apart (about 20 s).
  sim = await startSimulator({ faults: { chunkDelayMs: 50 }, replyTokens: 40 })
  longSim = await startSimulator({ faults: { chunkDelayMs: 40 }, replyTokens: 2_000 })
  dir = mkdtempSync(join(tmpdir(), "tollgate-startstop-"))
  configPath = join(dir, "tollgate.yaml")
  writeFileSync(
    configPath,
    `
upstreams:
  short: { protocol: openai, baseUrl: "${sim.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
  long: { protocol: openai, baseUrl: "${longSim.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 20000 }
models:
  - { id: sim-short, plugin: text, upstreams: [short], upstreamModel: sim-openai, pricing: { input: "0.15", output: "0.60" } }
  - { id: sim-long, plugin: text, upstreams: [long], upstreamModel: sim-openai, pricing: { input: "1.00", output: "10.00" }, maxOutputTokens: 4000 }
`
  )
}, 60_000)

afterAll(async () => {
  for (const gateway of running) {
    if (gateway.child.exitCode === null && gateway.child.signalCode === null) await killHard(gateway)
  }
  await sim?.close()
  await longSim?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

const envFor = (name: string, extra: Record<string, string> = {}) => ({
  TOLLGATE_ADMIN_TOKEN: ADMIN_TOKEN,
  TOLLGATE_CONFIG: configPath,
  TOLLGATE_DATA_DIR: join(dir, name),
  DATABASE_URL: "",
  ...extra
})

/** Resolves with the exit code and the milliseconds from `since`, or undefined if it is still running at `deadlineMs`. */
const exited = (gateway: Gateway, since: number, deadlineMs: number) =>
  new Promise<{ readonly code: number | null; readonly afterMs: number } | undefined>((resolve) => {
    if (gateway.child.exitCode !== null) return resolve({ code: gateway.child.exitCode, afterMs: Date.now() - since })
    const timer = setTimeout(() => resolve(undefined), deadlineMs)
    gateway.child.once("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, afterMs: Date.now() - since })
    })
  })

const customer = async (gateway: Gateway) => {
  const call = (path: string, body: unknown) => admin(gateway, "POST", path, body)
  const accountId = String((await call("/admin/accounts", { name: "startstop" })).body.id)
  await call(`/admin/accounts/${accountId}/deposits`, { amount: "20", reference: "d-1" })
  const key = String((await call(`/admin/accounts/${accountId}/keys`, { name: "k" })).body.key)
  return { accountId, key }
}

const stream = (gateway: Gateway, key: string, model: string) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, stream: true, max_tokens: 3000, messages: [{ role: "user", content: "A story" }] })
  })

describe("starting and stopping the gateway process", () => {
  it("answers or refuses every request sent while it starts; none is held", async () => {
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    const child = spawn(process.execPath, gatewayArgs(), {
      env: { ...process.env, ...envFor("starting"), PORT: String(port), HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    child.stderr?.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    running.push({ url, child, output: () => output })
    // A probe every 25 ms from the moment the process is spawned until one is answered 200.
    const probes: Array<Promise<"answered" | "refused">> = []
    let ready = false
    for (let i = 0; i < 2_400 && !ready && child.exitCode === null; i++) {
      const probe = fetch(`${url}/healthz`).then(
        (response) => {
          if (response.status === 200) ready = true
          return "answered" as const
        },
        () => "refused" as const
      )
      probes.push(probe)
      await sleep(25)
    }
    assert.isTrue(ready, `the gateway did not become ready:\n${output}`)
    // Each probe has had its answer or refusal by now; one accepted and never answered would still be pending.
    const settled = await Promise.race([
      Promise.all(probes),
      sleep(10_000).then(() => "some probe is still waiting" as const)
    ])
    assert.notStrictEqual(settled, "some probe is still waiting", `${probes.length} probes`)
    await killHard(running.at(-1) as Gateway)
  }, 120_000)

  it("SIGTERM serves a stream in flight to its end, settles it, and exits", async () => {
    const port = await freePort()
    const gateway = await startGateway(envFor("drain", { TOLLGATE_SHUTDOWN_GRACE_SECONDS: "20" }), port)
    running.push(gateway)
    const { accountId, key } = await customer(gateway)
    const response = await stream(gateway, key, "sim-short")
    assert.strictEqual(response.status, 200)
    let text = ""
    const reading = readDeltas(response, (delta) => {
      text += delta
    })
    await sleep(300)
    const signalled = Date.now()
    gateway.child.kill("SIGTERM")
    assert.isTrue(await reading, "the stream ended with [DONE]")
    assert.isAbove(text.length, 0)
    const exit = await exited(gateway, signalled, 15_000)
    assert.isDefined(exit, `still running 15 s after SIGTERM:\n${gateway.output()}`)
    // On the same data, the ledger shows the stream settled, and nothing held.
    const again = await startGateway(envFor("drain"), await freePort())
    running.push(again)
    const entries = await ledgerOf(again, accountId)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 1)
    assert.strictEqual(entries.filter((entry) => entry.type === "UsageRecalculated").length, 1)
    const account = await admin(again, "GET", `/admin/accounts/${accountId}`)
    assert.strictEqual(account.body.balance.held, "0.000000")
    await killHard(again)
  }, 120_000)

  it("SIGTERM cuts a stream longer than the grace when it ends, settles it, and exits", async () => {
    const port = await freePort()
    const gateway = await startGateway(envFor("cut", { TOLLGATE_SHUTDOWN_GRACE_SECONDS: "1" }), port)
    running.push(gateway)
    const { accountId, key } = await customer(gateway)
    const response = await stream(gateway, key, "sim-long")
    assert.strictEqual(response.status, 200)
    let text = ""
    const reading = readDeltas(response, (delta) => {
      text += delta
    })
    await sleep(500)
    const signalled = Date.now()
    gateway.child.kill("SIGTERM")
    const exit = await exited(gateway, signalled, 10_000)
    assert.isDefined(exit, `still running 10 s after SIGTERM with a 1 s grace:\n${gateway.output()}`)
    assert.isFalse(await reading, "the long stream was cut")
    assert.isAbove(text.length, 0)
    const again = await startGateway(envFor("cut"), await freePort())
    running.push(again)
    const entries = await ledgerOf(again, accountId)
    assert.strictEqual(assertEachHoldResolvedOnce(entries), 1)
    const account = await admin(again, "GET", `/admin/accounts/${accountId}`)
    assert.strictEqual(account.body.balance.held, "0.000000")
    await killHard(again)
  }, 120_000)
})
