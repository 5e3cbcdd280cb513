/**
 * Added latency of the gateway on one connection, billing on: the same non-streamed chat completion sent N times
 * straight to the simulator and N times through the gateway (hold + settle in the ledger on every call), on the
 * embedded store; prints p50/p99 of both and of the difference.
 *
 *   npm run bench -- latency [--requests 2000]
 */
import { Agent, request } from "undici"
import { startSimulator } from "../src/adapters/simulator/SimulatorServer.ts"
import { fundedKey } from "./suite/AdminCalls.ts"
import { startTestGateway } from "../test/support/TestGateway.ts"
import { benchOptions } from "./Options.ts"

const { number: arg } = benchOptions("latency")
const requests = arg("requests", 2000)

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

const body = JSON.stringify({
  model: "sim-openai",
  messages: [{ role: "user", content: "Hello there" }],
  max_tokens: 24
})
const dispatcher = new Agent({ connections: 1, pipelining: 1 })

const time = async (url: string, headers: Record<string, string>, count: number) => {
  const samples: Array<number> = []
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint()
    const response = await request(url, { method: "POST", headers, body, dispatcher })
    await response.body.arrayBuffer()
    if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`)
    samples.push(Number(process.hrtime.bigint() - started) / 1e6)
  }
  return samples.sort((a, b) => a - b)
}

const simulator = await startSimulator({})
const gateway = await startTestGateway()
const key = await fundedKey(gateway.url, gateway.adminToken, "latency", "1000")

const direct = {
  url: `${simulator.baseUrl}/v1/chat/completions`,
  headers: { authorization: `Bearer ${simulator.apiKey}`, "content-type": "application/json" }
}
const viaGateway = {
  url: `${gateway.url}/v1/chat/completions`,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }
}

await time(direct.url, direct.headers, 200)
await time(viaGateway.url, viaGateway.headers, 200)
const a = await time(direct.url, direct.headers, requests)
const b = await time(viaGateway.url, viaGateway.headers, requests)
const row = (label: string, s: ReadonlyArray<number>) =>
  console.log(`${label.padEnd(26)} p50 ${percentile(s, 50).toFixed(3)} ms   p99 ${percentile(s, 99).toFixed(3)} ms`)
row("simulator direct", a)
row("through the gateway", b)
console.log(
  `${"added by the gateway".padEnd(26)} p50 ${(percentile(b, 50) - percentile(a, 50)).toFixed(3)} ms   p99 ${(percentile(b, 99) - percentile(a, 99)).toFixed(3)} ms   (${requests} sequential requests, billing on, embedded store)`
)
await gateway.close()
await simulator.close()
await dispatcher.close()
process.exit(0)
