import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { inspect } from "node:util"
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import fc from "fast-check"
import { costPerMillion } from "../../src/domain/Money.ts"
import { builtinPriceKeys } from "../support/BuiltinPlugins.ts"
import {
  formatPrice,
  OperatorConfig,
  type OperatorConfigData,
  type OperatorConfigError,
  parsePrice
} from "../../src/app/OperatorConfig.ts"

const KEYS = {
  OPENAI_API_KEY: "sk-openai-SECRET-111",
  ANTHROPIC_API_KEY: "sk-ant-SECRET-222",
  GEMINI_API_KEY: "gm-SECRET-333"
}

const withEnv = (env: Record<string, string>) =>
  Effect.provide(Layer.merge(ConfigProvider.layer(ConfigProvider.fromEnvRecord(env)), NodeServices.layer))

const parseYaml = (text: string, env: Record<string, string> = KEYS) =>
  OperatorConfig.parse(text, { format: "yaml", baseDir: "/etc/tollgate" }).pipe(withEnv(env))

/** The issues a text produces; fails the test if it loads. */
const issuesOf = (text: string, env: Record<string, string> = KEYS) =>
  Effect.flip(parseYaml(text, env)).pipe(Effect.map((error: OperatorConfigError) => error.issues))

const EXAMPLE = `
upstreams:
  openai-main: { protocol: openai, baseUrl: "https://api.openai.com/v1", apiKey: "\${OPENAI_API_KEY}", timeoutMs: 600000 }
  claude:      { protocol: anthropic, baseUrl: "https://api.anthropic.com", apiKey: "\${ANTHROPIC_API_KEY}" }
  google:      { protocol: gemini, baseUrl: "https://generativelanguage.googleapis.com", apiKey: "\${GEMINI_API_KEY}" }
models:
  - id: gpt-4o-mini
    plugin: text
    upstreams: [openai-main, claude]
    upstreamModel: gpt-4o-mini-2024-07-18
    pricing: { input: "0.15", output: "0.60" }
    maxOutputTokens: 4096
  - id: nano-banana
    plugin: chat-image
    upstreams: [google]
    pricing: { perCall: "0.039" }
plugins: ["./examples/plugin-echo/index.ts", "@acme/tollgate-plugin-x"]
ledger: { holdTtlSeconds: 600 }
video: { pollIntervalMs: 2000, deadlineMinutes: 20, retentionDays: 3 }
files: { retentionDays: 7 }
`

/** A config with one openai upstream and the given models block. */
const withModels = (models: string) => `
upstreams:
  a: { protocol: openai, baseUrl: "https://a.example/v1", apiKey: "k" }
  b: { protocol: anthropic, baseUrl: "https://b.example", apiKey: "k" }
models:
${models}
`

describe("OperatorConfig", () => {
  it.effect("loads the documented example", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(EXAMPLE)
      assert.deepStrictEqual([...config.upstreams.keys()], ["openai-main", "claude", "google"])
      const openai = config.upstreams.get("openai-main")!
      assert.strictEqual(openai.protocol, "openai")
      assert.strictEqual(openai.baseUrl, "https://api.openai.com/v1")
      assert.strictEqual(Redacted.value(openai.apiKey), KEYS.OPENAI_API_KEY)
      assert.strictEqual(openai.timeoutMs, 600_000)
      assert.strictEqual(config.upstreams.get("claude")!.timeoutMs, 600_000)
      assert.strictEqual(config.upstreams.get("claude")!.idleTimeoutMs, 300_000)
      assert.strictEqual(config.upstreams.get("claude")!.maxConnections, 128)

      const [text, image] = config.models
      assert.strictEqual(text.id, "gpt-4o-mini")
      assert.strictEqual(text.plugin, "text")
      assert.deepStrictEqual(
        text.upstreams.map((upstream) => upstream.name),
        ["openai-main", "claude"]
      )
      assert.strictEqual(text.upstreams[1], config.upstreams.get("claude"))
      assert.strictEqual(text.upstreamModel, "gpt-4o-mini-2024-07-18")
      assert.deepStrictEqual(text.pricing, { input: 150_000n, output: 600_000n })
      assert.strictEqual(text.maxOutputTokens, 4096)
      assert.strictEqual(image.upstreamModel, "nano-banana")
      assert.deepStrictEqual(image.pricing, { perCall: 39_000n })
      assert.strictEqual(image.maxOutputTokens, undefined)

      assert.deepStrictEqual(config.plugins, ["/etc/tollgate/examples/plugin-echo/index.ts", "@acme/tollgate-plugin-x"])
      assert.deepStrictEqual(config.ledger, { holdTtlSeconds: 600 })
      assert.deepStrictEqual(config.video, { pollIntervalMs: 2000, deadlineMinutes: 20, retentionDays: 3 })
      assert.deepStrictEqual(config.files, { retentionDays: 7 })
    })
  )

  it.effect("applies defaults for ledger, video and plugins", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(
        withModels(`  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" } }`)
      )
      assert.deepStrictEqual(config.plugins, [])
      assert.deepStrictEqual(config.ledger, { holdTtlSeconds: 900 })
      assert.deepStrictEqual(config.video, { pollIntervalMs: 5000, deadlineMinutes: 30, retentionDays: 7 })
      assert.deepStrictEqual(config.files, { retentionDays: 30 })
    })
  )

  it.effect("reads batches: (the deployments' share, lines at once, lease) with defaults, and names bad values", () =>
    Effect.gen(function* () {
      const model = `  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" } }`
      assert.deepStrictEqual((yield* parseYaml(withModels(model))).batches, {
        deploymentSharePercent: 50,
        concurrency: 4,
        leaseSeconds: 120,
        vendorPollMillis: 30_000
      })
      const set = yield* parseYaml(
        `${withModels(model)}batches: { deploymentSharePercent: 25, leaseSeconds: 30, vendorPollMillis: 500 }\n`
      )
      assert.deepStrictEqual(set.batches, {
        deploymentSharePercent: 25,
        concurrency: 4,
        leaseSeconds: 30,
        vendorPollMillis: 500
      })
      const issues = yield* issuesOf(
        `${withModels(model)}batches: { deploymentSharePercent: 150, concurrency: 0, share: 1 }\n`
      )
      assert.deepStrictEqual(issues, [
        "batches.share: unknown key",
        "batches.deploymentSharePercent: expected a percentage from 1 to 100",
        "batches.concurrency: expected a positive integer"
      ])
    })
  )

  it.effect("reads an upstream's batch: true (openai and anthropic only) and names anything else at its path", () =>
    Effect.gen(function* () {
      const upstreams = (a: string, b: string, g: string) => `
upstreams:
  a: { protocol: openai, baseUrl: "https://a.example/v1", apiKey: "k"${a} }
  b: { protocol: anthropic, baseUrl: "https://b.example", apiKey: "k"${b} }
  g: { protocol: gemini, baseUrl: "https://g.example", apiKey: "k"${g} }
models:
  - { id: m, plugin: text, upstreams: [a, b, g], pricing: { input: "1", output: "2" } }
`
      const config = yield* parseYaml(upstreams(", batch: true", ", batch: true", ""))
      assert.deepStrictEqual(
        config.models[0]?.upstreams.map((upstream) => upstream.batch),
        [true, true, undefined]
      )
      const issues = yield* issuesOf(upstreams(', batch: "yes"', "", ", batch: true"))
      assert.deepStrictEqual(issues, [
        "upstreams.a.batch: expected true or false",
        "upstreams.g.batch: only an upstream of protocol openai or anthropic has a batch API"
      ])
    })
  )

  it.effect("reads a model's hostedTools setting (omit or refuse) and names anything else at its path", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(
        withModels(`  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" }, hostedTools: refuse }
  - { id: n, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" } }`)
      )
      assert.deepStrictEqual(
        config.models.map((m) => m.hostedTools),
        ["refuse", undefined]
      )
      const issues = yield* issuesOf(
        withModels(
          `  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" }, hostedTools: drop }`
        )
      )
      assert.deepStrictEqual(issues, ['models[0].hostedTools: must be "omit" or "refuse", not "drop"'])
    })
  )

  it.effect("reads a model's batchDiscountPercent (0 to 100) and names anything else at its path", () =>
    Effect.gen(function* () {
      const model = (discount: string) =>
        `  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" }, batchDiscountPercent: ${discount} }`
      const config = yield* parseYaml(
        withModels(`${model("0")}
  - { id: n, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" }, batchDiscountPercent: 100 }
  - { id: o, plugin: text, upstreams: [a], pricing: { input: "1", output: "2" } }`)
      )
      assert.deepStrictEqual(
        config.models.map((m) => m.batchDiscountPercent),
        [0, 100, undefined]
      )
      for (const bad of ["101", "-5", "12.5", '"half"']) {
        assert.deepStrictEqual(yield* issuesOf(withModels(model(bad))), [
          "models[0].batchDiscountPercent: expected a whole percentage from 0 to 100"
        ])
      }
    })
  )

  it.effect("expands $VAR references in any string, keeps escaped ones literal, and reads integers from them", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(
        `
upstreams:
  a: { protocol: openai, baseUrl: "https://\${HOST}/v1", apiKey: "pre-\${KEY}-$\${NOT_A_VAR}", timeoutMs: "\${TIMEOUT}" }
models: []
`,
        { HOST: "gw.example", KEY: "secret", TIMEOUT: "1234" }
      )
      const upstream = config.upstreams.get("a")!
      assert.strictEqual(upstream.baseUrl, "https://gw.example/v1")
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text an escaped reference leaves
      assert.strictEqual(Redacted.value(upstream.apiKey), "pre-secret-${NOT_A_VAR}")
      assert.strictEqual(upstream.timeoutMs, 1234)
    })
  )

  it.effect("names the path and the variable when a variable is missing, never a value", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(parseYaml(EXAMPLE, { OPENAI_API_KEY: KEYS.OPENAI_API_KEY }))
      assert.deepStrictEqual(error.issues, [
        "upstreams.claude.apiKey: environment variable ANTHROPIC_API_KEY is not set",
        "upstreams.google.apiKey: environment variable GEMINI_API_KEY is not set"
      ])
      assert.notInclude(error.message, KEYS.OPENAI_API_KEY)
      assert.include(error.message, "upstreams.claude.apiKey")
    })
  )

  it.effect("never shows an API key through String, JSON.stringify or inspect", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(EXAMPLE)
      const renderings = [
        String(config),
        JSON.stringify(config),
        JSON.stringify(config.models),
        JSON.stringify([...config.upstreams.values()]),
        String(config.upstreams.get("claude")!.apiKey),
        inspect(config, { depth: 10 }),
        inspect([...config.upstreams.values()], { depth: 10 })
      ]
      for (const rendering of renderings) {
        for (const key of Object.values(KEYS)) assert.notInclude(rendering, key)
      }
      assert.include(JSON.stringify([...config.upstreams.values()]), "<redacted")
      assert.deepStrictEqual(JSON.parse(JSON.stringify(config.models[0].pricing)), {
        input: "0.150000",
        output: "0.600000"
      })
    })
  )

  it.effect("reports a price that is not a decimal string at its path", () =>
    Effect.gen(function* () {
      const models = [0, 1, 2, 3]
        .map((i) =>
          i === 3
            ? `  - { id: m${i}, plugin: text, upstreams: [a], pricing: { input: 0.15, output: "1" } }`
            : `  - { id: m${i}, plugin: text, upstreams: [a], pricing: { input: "1", output: "1" } }`
        )
        .join("\n")
      assert.deepStrictEqual(yield* issuesOf(withModels(models)), [
        "models[3].pricing.input: expected a decimal string"
      ])
    })
  )

  it.effect("reports each kind of bad price: malformed values when decoding, keys the plugin does not bill by", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        withModels(`  - { id: m, plugin: text, upstreams: [a], pricing: { input: "0.0000001", output: "-1", "per-call": "1" } }
  - { id: n, plugin: text, upstreams: [a], pricing: { input: "1e3" } }`)
      )
      assert.deepStrictEqual(issues, [
        "models[0].pricing.input: at most 6 decimal places",
        "models[0].pricing.output: expected a decimal string",
        "models[0].pricing.per-call: not a price name (lowerCamelCase letters and digits)",
        "models[1].pricing.input: expected a decimal string"
      ])
      const config = yield* parseYaml(
        withModels(`  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "1", perCall: "1", foo: "1" } }
  - { id: n, plugin: text, upstreams: [a], pricing: { input: "1" } }
  - { id: t, plugin: transcription, upstreams: [a], pricing: {} }
  - { id: s, plugin: speech, upstreams: [a], pricing: { perMillionCharacters: "15" } }
  - { id: v, plugin: video, upstreams: [a], pricing: { output: "7", input: "1" } }`)
      )
      assert.deepStrictEqual(OperatorConfig.pluginIssues(config, builtinPriceKeys()), [
        "models[0].pricing.perCall: does not apply to the text plugin (allowed: input, output, cacheRead, cacheWrite, cacheWrite1h, webSearch, batchInput, batchOutput)",
        "models[0].pricing.foo: does not apply to the text plugin (allowed: input, output, cacheRead, cacheWrite, cacheWrite1h, webSearch, batchInput, batchOutput)",
        "models[1].pricing.output: required by the text plugin",
        "models[2].pricing: expected at least one of perSecond, input, output",
        "models[4].pricing.input: does not apply to the video plugin (allowed: output)"
      ])
    })
  )

  it.effect("takes a plugin's own protocol name and an auth scheme per upstream", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(`
upstreams:
  acme: { protocol: acme-ndjson, baseUrl: "https://api.acme.example/v2", apiKey: "k1", auth: { header: X-Acme-Key } }
  keyed: { protocol: openai, baseUrl: "https://keyed.example/v1", apiKey: "k2", auth: { query: key } }
  plain: { protocol: anthropic, baseUrl: "https://plain.example", apiKey: "k3", auth: bearer }
models: []
`)
      assert.strictEqual(config.upstreams.get("acme")?.protocol, "acme-ndjson")
      assert.deepStrictEqual(config.upstreams.get("acme")?.auth, { scheme: "header", name: "X-Acme-Key" })
      assert.deepStrictEqual(config.upstreams.get("keyed")?.auth, { scheme: "query", name: "key" })
      assert.deepStrictEqual(config.upstreams.get("plain")?.auth, { scheme: "bearer" })
      const issues = yield* issuesOf(`
upstreams:
  a: { protocol: openai, baseUrl: "https://a.example/v1", apiKey: "k", auth: { cookie: x } }
  b: { protocol: openai, baseUrl: "https://b.example/v1", apiKey: "k", auth: { header: "bad header" } }
models: []
`)
      assert.deepStrictEqual(issues, [
        'upstreams.a.auth: expected "bearer", { header: <header name> } or { query: <parameter name> }',
        'upstreams.b.auth: expected "bearer", { header: <header name> } or { query: <parameter name> }'
      ])
    })
  )

  it.effect("reports protocol, base URL and upstream field problems at their paths", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(`
upstreams:
  p: { protocol: "gRPC v2", baseUrl: "https://p.example/v1", apiKey: "k" }
  o: { protocol: openai, baseUrl: "https://o.example", apiKey: "k" }
  n: { protocol: anthropic, baseUrl: "https://n.example/v1", apiKey: "k" }
  g: { protocol: gemini, baseUrl: "https://g.example/v1beta/", apiKey: "k" }
  k: { protocol: ark, baseUrl: "https://ark.example/api/v2", apiKey: "k" }
  v: { protocol: openai-videos, baseUrl: "not a url", apiKey: "k" }
  q: { protocol: openai, baseUrl: "https://q.example/v1?x=1", apiKey: "" }
  m: { baseUrl: "https://m.example/v1", apikey: "k", timeoutMs: -5, maxConnections: 1.5 }
models: []
`)
      assert.deepStrictEqual(issues, [
        "upstreams.p.protocol: expected one of openai, anthropic, gemini, openai-responses, openai-videos, ark, or a plugin's own protocol name (lowercase letters, digits, dashes)",
        "upstreams.o.baseUrl: expected a URL ending in /v1 for the openai protocol",
        "upstreams.n.baseUrl: expected the host root for the anthropic protocol (endpoint paths already start with /v1)",
        "upstreams.g.baseUrl: expected the host root for the gemini protocol (endpoint paths already start with /v1)",
        "upstreams.k.baseUrl: expected a URL ending in /api/v3 for the ark protocol",
        "upstreams.v.baseUrl: expected an absolute http(s) URL",
        "upstreams.q.baseUrl: expected a URL without query or fragment",
        "upstreams.q.apiKey: expected a non-empty string",
        "upstreams.m.apikey: unknown key",
        "upstreams.m.protocol: required",
        "upstreams.m.apiKey: required",
        "upstreams.m.timeoutMs: expected a positive integer",
        "upstreams.m.maxConnections: expected a positive integer"
      ])
    })
  )

  it.effect("accepts every protocol with its base URL form", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(`
upstreams:
  o: { protocol: openai, baseUrl: "https://o.example/v1/", apiKey: "k" }
  n: { protocol: anthropic, baseUrl: "https://n.example", apiKey: "k" }
  g: { protocol: gemini, baseUrl: "https://g.example/", apiKey: "k" }
  v: { protocol: openai-videos, baseUrl: "https://v.example/v1", apiKey: "k" }
  k: { protocol: ark, baseUrl: "https://ark.ap-southeast.bytepluses.com/api/v3", apiKey: "k" }
models: []
`)
      assert.deepStrictEqual(
        [...config.upstreams.values()].map((upstream) => upstream.baseUrl),
        [
          "https://o.example/v1",
          "https://n.example",
          "https://g.example",
          "https://v.example/v1",
          "https://ark.ap-southeast.bytepluses.com/api/v3"
        ]
      )
    })
  )

  it.effect("reports model structure problems: references, ids, plugin, lists and numbers", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        withModels(`  - { id: m, plugin: text, upstreams: [a, nope], pricing: { input: "1", output: "1" } }
  - { id: m, plugin: text, upstreams: [], pricing: { input: "1", output: "1" } }
  - { plugin: "", upstreams: a, pricing: { input: "1", output: "1" }, maxOutputTokens: 0, extra: 1 }
  - { id: x, plugin: text, upstreams: [b] }
  - just-a-string`) +
          `
ledger: { holdTtlSeconds: "soon" }
server: { port: 1 }
`
      )
      assert.deepStrictEqual(issues, [
        "server: unknown key",
        "models[0].upstreams[1]: no such upstream (defined: a, b)",
        "models[1].id: duplicate model id (first defined at models[0].id)",
        "models[1].upstreams: expected at least one upstream name",
        "models[2].extra: unknown key",
        "models[2].id: required",
        "models[2].plugin: expected a non-empty string",
        "models[2].upstreams: expected a list",
        "models[2].maxOutputTokens: expected a positive integer",
        "models[3].pricing: required",
        "models[4]: expected an object",
        "ledger.holdTtlSeconds: expected a positive integer"
      ])
    })
  )

  it.effect("reads deployments: weights, priorities, limits and the short form's fallback order", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(`
upstreams:
  a: { protocol: openai, baseUrl: "https://a.example/v1", apiKey: "k", rpm: 100, maxConcurrency: 4 }
  b: { protocol: anthropic, baseUrl: "https://b.example", apiKey: "k" }
models:
  - id: m
    plugin: text
    upstreamModel: base
    deployments:
      - { upstream: a, weight: 3 }
      - { upstream: a, upstreamModel: other, weight: 0.5, priority: 1, maxConcurrency: 2, rpm: 10, tpm: 1000 }
      - b
    pricing: { input: "1", output: "1" }
  - { id: n, plugin: text, upstreams: [b, a], pricing: { input: "1", output: "1" } }
routing: { maxAttempts: 2, circuitOpenSeconds: 10 }
`)
      const [m, n] = config.models
      assert.deepStrictEqual(
        m?.deployments?.map((d) => [
          d.upstream.name,
          d.upstreamModel,
          d.weight,
          d.priority,
          d.maxConcurrency,
          d.rpm,
          d.tpm
        ]),
        [
          ["a", "base", 3, 0, null, null, null],
          ["a", "other", 0.5, 1, 2, 10, 1000],
          ["b", "base", 1, 0, null, null, null]
        ]
      )
      assert.deepStrictEqual(
        m?.upstreams.map((upstream) => upstream.name),
        ["a", "b"]
      )
      assert.deepStrictEqual(
        n?.deployments?.map((d) => [d.upstream.name, d.upstreamModel, d.priority]),
        [
          ["b", "n", 0],
          ["a", "n", 1]
        ]
      )
      assert.deepStrictEqual(config.upstreamLimits?.get("a"), { rpm: 100, tpm: null, maxConcurrency: 4 })
      assert.deepStrictEqual(config.routing, {
        maxAttempts: 2,
        retryBudgetMs: 30_000,
        failureThreshold: 5,
        circuitOpenSeconds: 10,
        cooldownSeconds: 1,
        maxCooldownSeconds: 300
      })
    })
  )

  it.effect("reports deployment problems at their paths", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        withModels(`  - id: m
    plugin: text
    upstreams: [a]
    deployments: [{ upstream: a }]
    pricing: { input: "1", output: "1" }
  - id: n
    plugin: text
    deployments:
      - { upstream: a, weight: 0, priority: -1, rpm: 1.5, color: red }
      - { upstream: a }
      - { upstream: nope }
      - { weight: 2 }
    pricing: { input: "1", output: "1" }
  - { id: o, plugin: text, deployments: [], pricing: { input: "1", output: "1" } }`) +
          `
routing: { maxAttempts: 0, jitter: 1 }
`
      )
      assert.deepStrictEqual(issues, [
        "models[0].deployments: give either upstreams or deployments, not both",
        "models[1].deployments[0].color: unknown key",
        "models[1].deployments[0].weight: expected a positive number (at most 1000000)",
        "models[1].deployments[0].priority: expected an integer of 0 or more (lower is preferred)",
        "models[1].deployments[0].rpm: expected a positive integer",
        "models[1].deployments[1]: this upstream and upstreamModel are already a deployment of this model",
        "models[1].deployments[2].upstream: no such upstream (defined: a, b)",
        "models[1].deployments[3].upstream: required",
        "models[2].deployments: expected at least one deployment",
        "routing.jitter: unknown key",
        "routing.maxAttempts: expected a positive integer"
      ])
    })
  )

  it.effect("reports unreadable text and empty files", () =>
    Effect.gen(function* () {
      const yaml = yield* issuesOf("upstreams: [\n  a: b")
      assert.strictEqual(yaml.length >= 1, true)
      assert.match(yaml[0], /^config: invalid YAML: .*line \d+/)
      assert.deepStrictEqual(yield* issuesOf(""), ["config: expected an object, the file is empty"])
      assert.deepStrictEqual(yield* issuesOf("- 1\n- 2"), ["config: expected an object"])
      assert.deepStrictEqual(yield* issuesOf("models: []"), ["upstreams: required"])
      const json = yield* Effect.flip(OperatorConfig.parse('{"upstreams": {', { format: "json" }).pipe(withEnv({})))
      assert.match(json.issues[0], /^config: invalid JSON/)
    })
  )

  it.effect("checks models against loaded plugins and their price keys", () =>
    Effect.gen(function* () {
      const config = yield* parseYaml(
        withModels(`  - { id: echo, plugin: echo, upstreams: [a], pricing: { perCall: "0.01" } }
  - { id: other, plugin: mystery, upstreams: [a], pricing: { input: "1" } }
  - { id: text, plugin: text, upstreams: [a], pricing: { input: "1", output: "1" } }
  - { id: echo2, plugin: echo, upstreams: [a], pricing: { input: "1" } }`)
      )
      const plugins = new Map([...builtinPriceKeys(), ["echo", { allowed: ["perCall"], required: [] }]])
      assert.deepStrictEqual(OperatorConfig.pluginIssues(config, plugins), [
        "models[1].plugin: no such plugin (known: text, chat-image, dedicated-image, video, embeddings, transcription, speech, echo)",
        "models[3].pricing.input: does not apply to the echo plugin (allowed: perCall)",
        "models[3].pricing: expected at least one of perCall"
      ])
      const error = yield* Effect.flip(OperatorConfig.validatePlugins(config, plugins))
      assert.strictEqual(error._tag, "OperatorConfigError")
      assert.strictEqual(error.issues.length, 3)
      yield* OperatorConfig.validatePlugins(
        { models: config.models.filter((model) => model.plugin !== "mystery" && model.id !== "echo2") },
        plugins
      )
    })
  )

  it.effect("loads YAML and JSON files, resolving plugin paths against the file's folder", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "tollgate-config-"))
      writeFileSync(join(dir, "tollgate.yaml"), EXAMPLE)
      const data = {
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a reference the loader expands
        upstreams: { a: { protocol: "openai", baseUrl: "https://a.example/v1", apiKey: "${OPENAI_API_KEY}" } },
        models: [{ id: "m", plugin: "embeddings", upstreams: ["a"], pricing: { input: "0.02" } }],
        plugins: ["../p.js"]
      }
      writeFileSync(join(dir, "tollgate.json"), JSON.stringify(data))
      const yaml = yield* OperatorConfig.load(join(dir, "tollgate.yaml")).pipe(withEnv(KEYS))
      assert.strictEqual(yaml.plugins[0], join(dir, "examples/plugin-echo/index.ts"))
      const json = yield* OperatorConfig.load(join(dir, "tollgate.json")).pipe(withEnv(KEYS))
      assert.deepStrictEqual(json.models[0].pricing, { input: 20_000n })
      assert.strictEqual(json.plugins[0], join(dir, "../p.js"))
      const missing = yield* Effect.flip(OperatorConfig.load(join(dir, "absent.yaml")).pipe(withEnv(KEYS)))
      assert.strictEqual(missing.source, join(dir, "absent.yaml"))
      assert.match(missing.issues[0], /^config: cannot read the file/)
    })
  )

  it.effect("the layer reads the file named by TOLLGATE_CONFIG", () =>
    Effect.gen(function* () {
      const dir = mkdtempSync(join(tmpdir(), "tollgate-config-"))
      const file = join(dir, "c.yaml")
      writeFileSync(file, EXAMPLE)
      const current = Effect.gen(function* () {
        return yield* OperatorConfig
      })
      const config: OperatorConfigData = yield* current.pipe(
        Effect.provide(OperatorConfig.layer),
        withEnv({ ...KEYS, TOLLGATE_CONFIG: file })
      )
      assert.strictEqual(config.models.length, 2)
      const error = yield* Effect.flip(current.pipe(Effect.provide(OperatorConfig.layer), withEnv(KEYS)))
      assert.deepStrictEqual(error.issues, ["TOLLGATE_CONFIG: environment variable is not set"])
    })
  )
})

describe("prices in micro-dollars", () => {
  it("any decimal price with up to six places round-trips to micro-dollars exactly", () => {
    fc.assert(
      fc.property(
        // Whole dollars up to the ledger's maximum (2^63 − 1 micro-dollars).
        fc.bigInt({ min: 0n, max: 9_223_372_036_853n }),
        fc.stringMatching(/^[0-9]{0,6}$/),
        (whole, fraction) => {
          const text = fraction === "" ? `${whole}` : `${whole}.${fraction}`
          const parsed = parsePrice(text)
          assert.isTrue("micros" in parsed, text)
          const micros = "micros" in parsed ? parsed.micros : -1n
          assert.strictEqual(micros, whole * 1_000_000n + BigInt(fraction.padEnd(6, "0")))
          assert.strictEqual(formatPrice(micros), `${whole}.${fraction.padEnd(6, "0")}`)
          const again = parsePrice(formatPrice(micros))
          assert.strictEqual("micros" in again ? again.micros : -1n, micros)
        }
      )
    )
  })

  it("a cost per million units is the exact product rounded up to the next micro-dollar", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.bigInt({ min: 0n, max: 10n ** 12n }), (units, price) => {
        const cost = costPerMillion(units, price)
        assert.isTrue(cost * 1_000_000n >= units * price)
        assert.isTrue(cost === 0n || (cost - 1n) * 1_000_000n < units * price)
      })
    )
    assert.strictEqual(costPerMillion(1_000n, 150_000n), 150n)
    assert.strictEqual(costPerMillion(1n, 150_000n), 1n)
  })
})
