/**
 * Starting the real gateway with an operator config file: a bad file stops the start with an error whose lines name
 * the bad path, whether the problem is found while decoding the file or once the plugins are loaded; `${VAR}` values
 * come from the environment, reach the upstream, and never appear in an error.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { inspect } from "node:util"
import { type RunningSimulator, startSimulator } from "../../src/adapters/simulator/SimulatorServer.ts"
import { startTestGateway } from "../support/TestGateway.ts"

const ECHO_MODULE = resolve(import.meta.dirname, "../../examples/plugin-echo/index.ts")
const SECRET = "sk-live-TOLLGATE-START-TEST-0123456789abcdef"

let dir: string
let simulator: RunningSimulator
let files = 0

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tollgate-start-"))
  simulator = await startSimulator({ apiKey: SECRET })
})

afterAll(async () => {
  await simulator?.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  delete process.env.TOLLGATE_START_TEST_KEY
  delete process.env.TOLLGATE_START_TEST_URL
})

const writeConfig = (text: string, extension = "yaml"): string => {
  const file = join(dir, `config-${++files}.${extension}`)
  writeFileSync(file, text)
  return file
}

/** Everything a start failure shows an operator: its message, its string, its inspected form. */
const startFailure = async (text: string, extension = "yaml") => {
  const configPath = writeConfig(text, extension)
  const error: unknown = await startTestGateway({ configPath }).then(
    async (gateway) => {
      await gateway.close()
      return assert.fail("the gateway started with a bad config")
    },
    (error: unknown) => error
  )
  const record = error as { _tag?: string; message?: string; issues?: ReadonlyArray<string> }
  assert.strictEqual(record._tag, "OperatorConfigError", inspect(error))
  return {
    configPath,
    issues: record.issues ?? [],
    shown: [String(error), record.message ?? "", inspect(error, { depth: 10 }), JSON.stringify(error)].join("\n")
  }
}

const upstreams = `
upstreams:
  sim: { protocol: openai, baseUrl: "\${TOLLGATE_START_TEST_URL}/v1", apiKey: "\${TOLLGATE_START_TEST_KEY}" }
`

describe("starting the gateway with an operator config", () => {
  beforeAll(() => {
    process.env.TOLLGATE_START_TEST_KEY = SECRET
    process.env.TOLLGATE_START_TEST_URL = simulator.baseUrl
  })

  it("names the path of a bad price, and never shows the expanded API key", async () => {
    const { configPath, issues, shown } = await startFailure(`${upstreams}
models:
  - { id: ok, plugin: text, upstreams: [sim], pricing: { input: "0.15", output: "0.60" } }
  - { id: bad, plugin: text, upstreams: [sim], pricing: { input: 0.15, output: "0.6000001" } }
`)
    assert.deepStrictEqual(issues, [
      "models[1].pricing.input: expected a decimal string",
      "models[1].pricing.output: at most 6 decimal places"
    ])
    assert.include(shown, `invalid operator config ${configPath}:`)
    assert.include(shown, "models[1].pricing.input: expected a decimal string")
    assert.notInclude(shown, SECRET)
  })

  it("reports every problem the file has at once, each by path", async () => {
    const { issues, shown } = await startFailure(`
upstreams:
  sim: { protocol: openai, baseUrl: "\${TOLLGATE_START_TEST_URL}", apiKey: "\${TOLLGATE_START_TEST_KEY}", timeoutMs: -1 }
  other: { protocol: "gRPC v2", baseUrl: "https://x.example/v1", apiKey: "\${TOLLGATE_START_TEST_MISSING}" }
models:
  - { id: a, plugin: text, upstreams: [sim, nowhere], pricing: { input: "0.15", output: "0.60", perCall: "1" } }
  - { id: a, plugin: text, upstreams: [sim], pricing: { input: "x" } }
ledger: { holdTtlSeconds: 0 }
surprise: true
`)
    assert.sameMembers(
      [...issues],
      [
        "upstreams.sim.baseUrl: expected a URL ending in /v1 for the openai protocol",
        "upstreams.sim.timeoutMs: expected a positive integer",
        "upstreams.other.protocol: expected one of openai, anthropic, gemini, openai-responses, openai-videos, ark, or a plugin's own protocol name (lowercase letters, digits, dashes)",
        "upstreams.other.apiKey: environment variable TOLLGATE_START_TEST_MISSING is not set",
        "models[0].upstreams[1]: no such upstream (defined: sim, other)",
        "models[0].pricing.perCall: does not apply to the text plugin (allowed: input, output, cacheRead, cacheWrite, cacheWrite1h, webSearch, batchInput, batchOutput)",
        "models[1].id: duplicate model id (first defined at models[0].id)",
        "models[1].pricing.input: expected a decimal string",
        "models[1].pricing.output: required by the text plugin",
        "ledger.holdTtlSeconds: expected a positive integer",
        "surprise: unknown key"
      ]
    )
    assert.notInclude(shown, SECRET)
  })

  it("names, once plugins are loaded, a model whose plugin nobody declares and a price its plugin does not bill by", async () => {
    const { issues, shown } = await startFailure(`${upstreams}
models:
  - { id: echo-1, plugin: echo, upstreams: [sim], pricing: { perCall: "0.01", input: "0.15" } }
  - { id: other, plugin: ech0, upstreams: [sim], pricing: { perCall: "0.01" } }
plugins: ["${ECHO_MODULE}"]
`)
    assert.strictEqual(issues.length, 2, issues.join("\n"))
    assert.strictEqual(
      issues[0],
      "models[0].pricing.input: does not apply to the echo plugin (allowed: perCall, output)"
    )
    assert.match(issues[1], /^models\[1\]\.plugin: no such plugin \(known: .*\)$/)
    assert.include(issues[1], "echo")
    assert.include(issues[1], "text")
    assert.notInclude(shown, SECRET)
  })

  it("names a plugin module that does not exist, resolved against the config's folder", async () => {
    const { issues } = await startFailure(`${upstreams}
models:
  - { id: m, plugin: text, upstreams: [sim], pricing: { input: "0.15", output: "0.60" } }
plugins: ["./plugins/missing.ts"]
`)
    assert.strictEqual(issues.length, 1)
    assert.include(issues[0], `plugins: cannot load ${join(dir, "plugins/missing.ts")}: `)
  })

  it("names a plugin module that exports the wrong shape", async () => {
    const module = join(dir, "not-a-plugin.mjs")
    writeFileSync(module, `export default { id: "thing", kind: "chat" }`)
    const { issues } = await startFailure(`${upstreams}
models:
  - { id: m, plugin: text, upstreams: [sim], pricing: { input: "0.15", output: "0.60" } }
plugins: ["./not-a-plugin.mjs"]
`)
    assert.deepStrictEqual(issues, [
      `plugins: ${module}: specificationVersion: expected "v1"`,
      `plugins: ${module}: family: expected a string`,
      `plugins: ${module}: pricing.estimate: expected a function`,
      `plugins: ${module}: pricing.price: expected a function`,
      `plugins: ${module}: invoke: expected a function`,
      `plugins: ${module}: pricingKeys: expected { allowed, required }`
    ])
  })

  it("names invalid JSON or YAML without quoting the file", async () => {
    const json = await startFailure(`{ "upstreams": { "a": { "apiKey": "${SECRET}" } }, "models": [ }`, "json")
    assert.deepStrictEqual(json.issues.length, 1)
    assert.match(json.issues[0], /^config: invalid JSON/)
    assert.notInclude(json.shown, SECRET)
    const yaml = await startFailure(`upstreams:\n  sim: { apiKey: "${SECRET}"\nmodels: [`)
    assert.match(yaml.issues[0], /^config: invalid YAML: /)
    assert.notInclude(yaml.shown, SECRET)
  })

  it("expands environment variable references: the expanded key reaches the upstream", async () => {
    const configPath = writeConfig(`${upstreams}
models:
  - { id: sim-model, plugin: text, upstreams: [sim], upstreamModel: gpt-4o-mini, pricing: { input: "0.15", output: "0.60" } }
`)
    const gateway = await startTestGateway({ configPath })
    try {
      const admin = (path: string, body: unknown) =>
        fetch(`${gateway.url}${path}`, {
          method: "POST",
          headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
          body: JSON.stringify(body)
        }).then((response) => response.json() as Promise<Record<string, string>>)
      const account = await admin("/admin/accounts", { name: "env" })
      await admin(`/admin/accounts/${account.id}/deposits`, { amount: "1", reference: "env-1" })
      const key = await admin(`/admin/accounts/${account.id}/keys`, { name: "env" })
      const response = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${key.key}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "sim-model", messages: [{ role: "user", content: "hi" }] })
      })
      const text = await response.text()
      // The simulator refuses any other key with 401, which the gateway would turn into a 502.
      assert.strictEqual(response.status, 200, text)
      assert.isString(JSON.parse(text).choices[0].message.content)
      assert.notInclude(text, SECRET)
    } finally {
      await gateway.close()
    }
  })

  // Gap: decoding (src/app/config/decodeOperatorConfig.ts) and the plugin checks (PluginRegistry.buildRegistry →
  // OperatorConfig.validatePlugins) run in two phases, so an operator whose file has a bad price AND an unknown plugin
  // sees only the price, fixes it, restarts, and only then learns about the plugin. Fix: when decoding fails, still
  // load the plugins (if `plugins:` decoded) and append pluginIssues for the models that decoded, or at least check
  // `models[i].plugin` against the built-ins plus the plugin ids once they are loaded before failing.
  it.fails("reports a decoding problem and an unknown plugin in the same start", async () => {
    const { issues } = await startFailure(`${upstreams}
models:
  - { id: a, plugin: text, upstreams: [sim], pricing: { input: 1, output: "0.60" } }
  - { id: b, plugin: nope, upstreams: [sim], pricing: { perCall: "1" } }
`)
    assert.strictEqual(issues.length, 2, issues.join("\n"))
  })
})
