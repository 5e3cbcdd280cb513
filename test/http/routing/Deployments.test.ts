/**
 * Routing across deployments, end to end: a gateway on PGlite in front of several simulated vendors (healthy ones,
 * one failing with 500, one rate limiting, one with a wrong key, a slow one). Spreading by weight (exact, by the
 * round robin), priority tiers, failover before the first byte (JSON and streams), cooldowns that honour
 * `retry-after`, circuits that open and close on a trial, upstreams disabled for refused credentials and enabled
 * again through the admin API, per-deployment limits, prompt-cache affinity, and `/metrics`. Each call is billed
 * once, on the deployment that answered.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

const price = `pricing: { input: "0.15", output: "0.60" }`

const configYaml = (s: Record<string, RunningSimulator>) => `
upstreams:
  a: { protocol: openai, baseUrl: "${s.a?.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  b: { protocol: openai, baseUrl: "${s.b?.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  c: { protocol: anthropic, baseUrl: "${s.c?.baseUrl}", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  failing: { protocol: openai, baseUrl: "${s.failing?.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  limited: { protocol: openai, baseUrl: "${s.limited?.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  wrongkey: { protocol: openai, baseUrl: "${s.wrongkey?.baseUrl}/v1", apiKey: "sk-not-the-key", timeoutMs: 10000 }
  slow: { protocol: openai, baseUrl: "${s.slow?.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  ark: { protocol: ark, baseUrl: "${s.a?.baseUrl}/api/v3", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
models:
  - { id: clip, plugin: video, upstreams: [ark], upstreamModel: seedance-2-0-fast, pricing: { output: "1.40" } }
  - id: spread
    plugin: text
    deployments: [{ upstream: a, upstreamModel: m-a, weight: 3 }, { upstream: b, upstreamModel: m-b, weight: 1 }]
    ${price}
  - id: tiers
    plugin: text
    deployments:
      - { upstream: failing, upstreamModel: m-f, priority: 0 }
      - { upstream: b, upstreamModel: m-tiers, priority: 1 }
    ${price}
  - id: cooled
    plugin: text
    deployments: [{ upstream: limited, upstreamModel: m-l }, { upstream: c, upstreamModel: m-c }]
    ${price}
  - id: keyed
    plugin: text
    deployments: [{ upstream: wrongkey, upstreamModel: m-w }, { upstream: a, upstreamModel: m-keyed }]
    ${price}
  - { id: only-wrongkey, plugin: text, upstreams: [wrongkey], upstreamModel: m-w2, ${price} }
  - id: capped
    plugin: text
    deployments: [{ upstream: slow, upstreamModel: m-s, maxConcurrency: 1 }, { upstream: b, upstreamModel: m-capped, priority: 1 }]
    ${price}
  - id: sticky
    plugin: text
    deployments: [{ upstream: a, upstreamModel: m-sa }, { upstream: b, upstreamModel: m-sb }]
    ${price}
routing: { failureThreshold: 3, circuitOpenSeconds: 2 }
`

interface Upstream {
  readonly name: string
  readonly state: string
  readonly disabled: { readonly reason: string; readonly message: string } | null
  readonly deployments: ReadonlyArray<{
    readonly upstream: string
    readonly model: string
    readonly upstreamModel: string
    readonly state: string
    readonly until: string | null
    readonly inFlight: number
    readonly requests: Record<string, number>
    readonly errorRate: number
  }>
}

let sims: Record<string, RunningSimulator>
let gateway: TestGateway
let admin: Admin
let key: string
let accountId: string
let dir: string

const chat = (model: string, extra: Record<string, unknown> = {}) =>
  fetch(`${gateway.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "Say something" }], max_tokens: 16, ...extra })
  })

const ok = async (model: string, extra: Record<string, unknown> = {}) => {
  const response = await chat(model, extra)
  const text = await response.text()
  assert.strictEqual(response.status, 200, text)
  return text
}

/** Calls each simulator received for `upstreamModel`. */
const callsFor = (sim: RunningSimulator | undefined, upstreamModel: string) =>
  (sim?.calls() ?? []).filter((call) => (call.body as { model?: unknown } | null)?.model === upstreamModel).length

const upstreams = async (): Promise<ReadonlyArray<Upstream>> => {
  const response = await admin.call("GET", "/admin/upstreams")
  assert.strictEqual(response.status, 200)
  return (response.body as unknown as { data: ReadonlyArray<Upstream> }).data
}

const deployment = async (upstream: string, model: string) => {
  const found = (await upstreams()).find((entry) => entry.name === upstream)
  const entry = found?.deployments.find((candidate) => candidate.model === model)
  assert.isDefined(entry, `${upstream}/${model}`)
  return { upstream: found as Upstream, deployment: entry as NonNullable<typeof entry> }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

beforeAll(async () => {
  sims = {
    a: await startSimulator(),
    b: await startSimulator(),
    c: await startSimulator(),
    failing: await startSimulator({ faults: { status: 500 } }),
    limited: await startSimulator(),
    wrongkey: await startSimulator(),
    slow: await startSimulator({ faults: { latencyMs: 400 } })
  }
  dir = mkdtempSync(join(tmpdir(), "tollgate-routing-"))
  const configPath = join(dir, "tollgate.yaml")
  writeFileSync(configPath, configYaml(sims))
  gateway = await startTestGateway({ configPath })
  admin = makeAdmin(gateway)
  const customer = await admin.customer({ deposit: "100" })
  key = customer.key
  accountId = customer.accountId
}, 60_000)

afterAll(async () => {
  await gateway?.close()
  for (const sim of Object.values(sims ?? {})) await sim.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe("deployments", () => {
  it("spreads 2,000 requests 3:1 by weight, exactly, and bills each once", { timeout: 120_000 }, async () => {
    sims.a?.clearCalls()
    sims.b?.clearCalls()
    let a = 0
    let b = 0
    // Sixteen at a time; the simulators keep their last 500 calls, so they are counted and cleared per batch.
    for (let batch = 0; batch < 5; batch++) {
      await Promise.all(
        Array.from({ length: 16 }, async (_, lane) => {
          for (let index = lane; index < 400; index += 16) await ok("spread")
        })
      )
      a += callsFor(sims.a, "m-a")
      b += callsFor(sims.b, "m-b")
      sims.a?.clearCalls()
      sims.b?.clearCalls()
    }
    assert.strictEqual(a + b, 2000)
    assert.approximately(a / 2000, 0.75, 0.05 * 0.75)
    // The smooth round robin is exact: 1,500 and 500, give or take the interleaving of concurrent requests.
    assert.approximately(a, 1500, 16)
    const stats = await deployment("a", "spread")
    assert.strictEqual(stats.deployment.requests.success, a)
    const usage = (await admin.ledger(accountId)).filter((entry) => entry.type === "UsageRecalculated")
    assert.isAtLeast(usage.length, 2000)
  })

  it("fails over before the first byte to the next tier, then opens the failing deployment's circuit", async () => {
    sims.failing?.clearCalls()
    for (let index = 0; index < 3; index++) await ok("tiers")
    // JSON and streams alike: the client never sees the 500.
    const streamed = await ok("tiers", { stream: true })
    assert.include(streamed, "[DONE]")
    const failed = callsFor(sims.failing, "m-f")
    assert.strictEqual(failed, 3, "the circuit opens on the third failure in a row")
    const open = await deployment("failing", "tiers")
    assert.strictEqual(open.deployment.state, "open")
    assert.isNotNull(open.deployment.until)
    // While open, no traffic reaches it.
    for (let index = 0; index < 3; index++) await ok("tiers")
    assert.strictEqual(callsFor(sims.failing, "m-f"), 3)
    // Once its time is over, one trial goes; a success closes the circuit.
    sims.failing?.clearFaults()
    await sleep(2_100)
    await ok("tiers")
    assert.strictEqual(callsFor(sims.failing, "m-f"), 4)
    assert.strictEqual((await deployment("failing", "tiers")).deployment.state, "healthy")
    sims.failing?.setFaults({ status: 500 })
  })

  it("honours retry-after: a rate-limited deployment takes nothing until it is over, then takes traffic again", async () => {
    sims.limited?.clearCalls()
    sims.c?.clearCalls()
    sims.limited?.setFaults({ status: 429, retryAfterSeconds: 2 }, 1)
    // The first request meets the 429 and is served by the other deployment (another protocol, even).
    for (let index = 0; index < 6; index++) await ok("cooled")
    assert.strictEqual(callsFor(sims.limited, "m-l"), 1)
    assert.strictEqual(callsFor(sims.c, "m-c"), 6)
    const cooling = await deployment("limited", "cooled")
    assert.strictEqual(cooling.deployment.state, "cooling")
    await sleep(2_100)
    for (let index = 0; index < 6; index++) await ok("cooled")
    assert.strictEqual(callsFor(sims.limited, "m-l"), 4, "back in the round robin, half of the traffic")
  })

  it("disables an upstream that refuses the gateway's key, says so, and takes it back when enabled", async () => {
    sims.wrongkey?.clearCalls()
    for (let index = 0; index < 4; index++) await ok("keyed")
    assert.strictEqual(callsFor(sims.wrongkey, "m-w"), 1, "one 401, then never again")
    const { upstream, deployment: state } = await deployment("wrongkey", "keyed")
    assert.strictEqual(upstream.state, "disabled")
    assert.strictEqual(upstream.disabled?.reason, "auth")
    assert.include(upstream.disabled?.message ?? "", "401")
    assert.notInclude(JSON.stringify(upstream), "sk-not-the-key")
    assert.strictEqual(state.state, "disabled")
    // A model with no other upstream answers a clear 503, without calling the disabled one.
    const refused = await chat("only-wrongkey")
    assert.strictEqual(refused.status, 503)
    const body = (await refused.json()) as { error: { message: string } }
    assert.include(body.error.message, "disabled")
    assert.strictEqual(callsFor(sims.wrongkey, "m-w2"), 0)
    // Enabled again: it takes traffic (and, its key still wrong, is disabled again at once).
    const enabled = await admin.call("POST", "/admin/upstreams/wrongkey/enable")
    assert.strictEqual(enabled.status, 200)
    assert.strictEqual((enabled.body as unknown as Upstream).state, "enabled")
    await ok("keyed")
    await ok("keyed")
    assert.strictEqual(callsFor(sims.wrongkey, "m-w"), 2)
    assert.strictEqual((await deployment("wrongkey", "keyed")).upstream.disabled?.reason, "auth")
  })

  it("lets an operator disable and enable an upstream, and answers 404 for an unknown one", async () => {
    const disabled = await admin.call("POST", "/admin/upstreams/b/disable")
    assert.strictEqual(disabled.status, 200)
    assert.strictEqual((disabled.body as unknown as Upstream).disabled?.reason, "operator")
    sims.b?.clearCalls()
    for (let index = 0; index < 4; index++) await ok("spread")
    assert.strictEqual(callsFor(sims.b, "m-b"), 0)
    assert.strictEqual((await admin.call("POST", "/admin/upstreams/b/enable")).status, 200)
    for (let index = 0; index < 4; index++) await ok("spread")
    assert.strictEqual(callsFor(sims.b, "m-b"), 1)
    assert.strictEqual((await admin.call("POST", "/admin/upstreams/nope/enable")).status, 404)
    const patched = await admin.call("PATCH", "/admin/upstreams/b", { enabled: false })
    assert.strictEqual((patched.body as unknown as Upstream).state, "disabled")
    assert.strictEqual((await admin.call("PATCH", "/admin/upstreams/b", { enabled: "yes" })).status, 400)
    assert.strictEqual(
      ((await admin.call("PATCH", "/admin/upstreams/b", { enabled: true })).body as unknown as Upstream).state,
      "enabled"
    )
    // The same deployments, as one flat list.
    const listed = (await admin.call("GET", "/admin/upstreams")).body as unknown as {
      data: ReadonlyArray<Upstream>
      deployments: Upstream["deployments"]
    }
    assert.deepStrictEqual(
      listed.deployments,
      listed.data.flatMap((upstream) => upstream.deployments)
    )
    assert.isTrue(listed.deployments.some((entry) => entry.model === "spread" && entry.upstream === "b"))
    // A video model keeps to its own dispatch: its upstream is listed, without a deployment that would look idle.
    assert.deepStrictEqual((await upstreams()).find((entry) => entry.name === "ark")?.deployments, [])
    const unauthorized = await fetch(`${gateway.url}/admin/upstreams`)
    assert.strictEqual(unauthorized.status, 401)
  })

  it("sends past a deployment at its maxConcurrency to the next tier", async () => {
    sims.slow?.clearCalls()
    sims.b?.clearCalls()
    await Promise.all([ok("capped"), ok("capped"), ok("capped")])
    assert.strictEqual(callsFor(sims.slow, "m-s"), 1)
    assert.strictEqual(callsFor(sims.b, "m-capped"), 2)
    assert.strictEqual((await deployment("slow", "capped")).deployment.inFlight, 0)
  })

  it("keeps a conversation on one deployment (prompt_cache_key or a long shared prefix) and spreads the others", async () => {
    sims.a?.clearCalls()
    sims.b?.clearCalls()
    for (let index = 0; index < 8; index++) await ok("sticky", { prompt_cache_key: "conversation-1" })
    const onA = callsFor(sims.a, "m-sa")
    assert.isTrue(onA === 8 || onA === 0, `all on one deployment, not ${onA} of 8`)
    const system = `You are a careful assistant. ${"Follow the house rules. ".repeat(300)}`
    sims.a?.clearCalls()
    sims.b?.clearCalls()
    for (let index = 0; index < 6; index++) {
      await ok("sticky", {
        messages: [
          { role: "system", content: system },
          { role: "user", content: `question ${index}` }
        ]
      })
    }
    const longOnA = callsFor(sims.a, "m-sa")
    assert.isTrue(longOnA === 6 || longOnA === 0, `all on one deployment, not ${longOnA} of 6`)
    // A short conversation follows its first turn: each next turn repeats the previous prompt as its prefix.
    for (let conversation = 0; conversation < 4; conversation++) {
      sims.a?.clearCalls()
      sims.b?.clearCalls()
      const messages: Array<{ role: string; content: string }> = [
        { role: "user", content: `conversation ${conversation}: hello` }
      ]
      for (let turn = 0; turn < 4; turn++) {
        const reply = JSON.parse(await ok("sticky", { messages })) as {
          choices: Array<{ message: { content: string } }>
        }
        messages.push({ role: "assistant", content: reply.choices[0]?.message.content ?? "" })
        messages.push({ role: "user", content: `and turn ${turn + 1}?` })
      }
      const turnsOnA = callsFor(sims.a, "m-sa")
      assert.isTrue(turnsOnA === 4 || turnsOnA === 0, `conversation ${conversation}: ${turnsOnA} of 4 turns on one`)
    }
    // Short prompts have no cache to keep warm: they alternate.
    sims.a?.clearCalls()
    for (let index = 0; index < 8; index++) await ok("sticky")
    assert.strictEqual(callsFor(sims.a, "m-sa"), 4)
    // Many conversations spread over both.
    sims.a?.clearCalls()
    for (let index = 0; index < 40; index++) await ok("sticky", { prompt_cache_key: `conversation-${index}` })
    const spread = callsFor(sims.a, "m-sa")
    assert.isTrue(spread > 8 && spread < 32, `${spread} of 40 on one deployment`)
  })

  it("exports each deployment's state and attempts to /metrics", async () => {
    const text = await (await fetch(`${gateway.url}/metrics`)).text()
    assert.match(
      text,
      /tollgate_deployment_state\{model="spread",upstream="a",upstream_model="m-a",state="healthy"\} 1/
    )
    assert.match(
      text,
      /tollgate_deployment_attempts_total\{model="keyed",upstream="wrongkey",upstream_model="m-w",outcome="auth"\} [1-9]/
    )
    assert.match(text, /tollgate_deployment_in_flight\{model="capped",upstream="slow",upstream_model="m-s"\} 0/)
  })
})
