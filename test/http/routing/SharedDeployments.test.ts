/**
 * Two gateway instances sharing routing state through Redis (`REDIS_URL`): a cooldown one instance learns from a
 * vendor's 429, an open circuit, and an upstream an operator disables on one, are all honoured by the other.
 * Skipped, saying so, without a Redis at REDIS_URL (default redis://127.0.0.1:6379). Upstream names carry a random
 * suffix, so runs sharing one Redis never see each other's state.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { redisAnswers, redisUrl } from "../../support/Redis.ts"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type RunningSimulator, startSimulator } from "../../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { type Admin, makeAdmin } from "../chat/ChatHarness.ts"

const redisUp = await redisAnswers()
if (!redisUp) console.warn(`[tollgate] no Redis at ${redisUrl}: the shared routing-state suite is skipped`)

const suffix = randomBytes(4).toString("hex")
const x = `x-${suffix}`
const y = `y-${suffix}`

const configYaml = (sx: RunningSimulator, sy: RunningSimulator) => `
upstreams:
  ${x}: { protocol: openai, baseUrl: "${sx.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
  ${y}: { protocol: openai, baseUrl: "${sy.baseUrl}/v1", apiKey: "sk-sim-test-key", timeoutMs: 10000 }
models:
  - id: shared
    plugin: text
    deployments: [{ upstream: ${x}, upstreamModel: m-x }, { upstream: ${y}, upstreamModel: m-y }]
    pricing: { input: "0.15", output: "0.60" }
routing: { failureThreshold: 2, circuitOpenSeconds: 30 }
`

describe.skipIf(!redisUp)("deployment state shared through Redis", () => {
  let simX: RunningSimulator
  let simY: RunningSimulator
  let dir: string
  const instances: Array<{ gateway: TestGateway; admin: Admin; key: string }> = []

  beforeAll(async () => {
    simX = await startSimulator()
    simY = await startSimulator()
    dir = mkdtempSync(join(tmpdir(), "tollgate-shared-routing-"))
    const configPath = join(dir, "tollgate.yaml")
    writeFileSync(configPath, configYaml(simX, simY))
    for (let index = 0; index < 2; index++) {
      const gateway = await startTestGateway({ configPath, redisUrl })
      const admin = makeAdmin(gateway)
      const { key } = await admin.customer({ deposit: "10" })
      instances.push({ gateway, admin, key })
    }
  }, 60_000)

  afterAll(async () => {
    // Leave nothing disabled behind in the shared Redis.
    await instances[0]?.admin.call("POST", `/admin/upstreams/${x}/enable`)
    for (const instance of instances) await instance.gateway.close()
    await simX?.close()
    await simY?.close()
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  const ok = async (index: number) => {
    const instance = instances[index]
    if (instance === undefined) throw new Error("no instance")
    const response = await fetch(`${instance.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${instance.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "shared", messages: [{ role: "user", content: "Hi" }], max_tokens: 8 })
    })
    assert.strictEqual(response.status, 200, await response.text())
  }
  const onX = () => simX.calls().length

  it("a cooldown learned by one instance keeps the other away for the vendor's retry-after", async () => {
    simX.setFaults({ status: 429, retryAfterSeconds: 3 }, 1)
    await ok(0)
    await ok(0)
    assert.strictEqual(onX(), 1, "instance 1 met the 429 and moved on")
    simX.clearCalls()
    for (let index = 0; index < 6; index++) await ok(1)
    assert.strictEqual(onX(), 0, "instance 2 honours the cooldown it did not see")
    const seen = await instances[1]?.admin.call("GET", "/admin/upstreams")
    type Listed = { data: Array<{ name: string; deployments: Array<{ state: string }> }> }
    const entry = ((seen?.body ?? { data: [] }) as unknown as Listed).data
    assert.strictEqual(entry.find((upstream) => upstream.name === x)?.deployments[0]?.state, "cooling")
    await new Promise((resolve) => setTimeout(resolve, 3_100))
    for (let index = 0; index < 4; index++) await ok(1)
    assert.isAtLeast(onX(), 1, "back in rotation once the cooldown is over")
  })

  it("an upstream disabled on one instance takes nothing from the other until enabled there", async () => {
    const disabled = await instances[0]?.admin.call("POST", `/admin/upstreams/${x}/disable`)
    assert.strictEqual(disabled?.status, 200)
    simX.clearCalls()
    for (let index = 0; index < 6; index++) await ok(1)
    assert.strictEqual(onX(), 0)
    assert.strictEqual((await instances[1]?.admin.call("POST", `/admin/upstreams/${x}/enable`))?.status, 200)
    for (let index = 0; index < 4; index++) await ok(0)
    assert.isAtLeast(onX(), 1)
  })

  it("a circuit opened by one instance's failures is open for the other", async () => {
    simX.setFaults({ status: 500 })
    simX.clearCalls()
    for (let index = 0; index < 6; index++) await ok(0)
    assert.strictEqual(onX(), 2, "opened on the second failure in a row")
    for (let index = 0; index < 6; index++) await ok(1)
    assert.strictEqual(onX(), 2)
    simX.clearFaults()
  })
})
