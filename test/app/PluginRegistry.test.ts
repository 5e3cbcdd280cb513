/**
 * Loading third-party plugin modules and building the model → plugin registry from the operator config: every problem
 * is an `OperatorConfigError` whose issues name the path (`plugins: …`, `models[i].plugin`, `models[i].pricing.key`).
 */
import { NodeServices } from "@effect/platform-node"
import { afterAll, assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import type { UpstreamClient } from "../../src/adapters/upstream/UpstreamClient.ts"
import { OperatorConfig, type OperatorConfigError } from "../../src/app/OperatorConfig.ts"
import { buildRegistry, DEFAULT_MAX_OUTPUT_TOKENS, loadPlugins } from "../../src/app/PluginRegistry.ts"
import { makeTextPlugin } from "../../src/plugins/text/TextPlugin.ts"

const ECHO_MODULE = resolve(import.meta.dirname, "../../examples/plugin-echo/index.ts")

const dir = mkdtempSync(join(tmpdir(), "tollgate-plugins-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Writes a plugin module (plain JS, no imports, so it loads from any folder) and returns its absolute path. */
const moduleFile = (name: string, source: string): string => {
  const file = join(dir, name)
  writeFileSync(file, source)
  return file
}

const pluginSource = (fields: string, exportAs = "export default plugin") => `
const plugin = {
  specificationVersion: "v1",
  id: "acme",
  family: "acme",
  kind: "chat",
  pricingKeys: { allowed: ["perCall"], required: ["perCall"] },
  pricing: { estimate: () => 0n, price: () => 0n },
  invoke: () => { throw new Error("not called in these tests") },
  ${fields}
}
${exportAs}
`

const parse = (yaml: string, baseDir = dir) =>
  OperatorConfig.parse(yaml, { format: "yaml", baseDir }).pipe(
    Effect.provide(Layer.merge(ConfigProvider.layer(ConfigProvider.fromEnvRecord({})), NodeServices.layer))
  )

/** An upstream client for plugins that are built but never invoked here. */
const unusedClient: UpstreamClient["Service"] = { request: () => Effect.die("no upstream call in these tests") }

/** Loads the config's plugins and builds the registry over them and the built-in text plugin, as the gateway does. */
const registry = (yaml: string) =>
  Effect.gen(function* () {
    const config = yield* parse(yaml)
    const external = yield* loadPlugins(config.plugins)
    const built = yield* buildRegistry(config, [makeTextPlugin(unusedClient), ...external], (id) => `owner:${id}`, 0)
    return { lookup: (id: string) => built.entries.get(id), plugins: built.plugins, catalog: built.catalog }
  })

const issuesOf = <A, R>(effect: Effect.Effect<A, OperatorConfigError, R>) =>
  Effect.flip(effect).pipe(Effect.map((error) => error.issues))

const config = (models: string, plugins: ReadonlyArray<string> = [ECHO_MODULE]) => `
upstreams:
  a: { protocol: openai, baseUrl: "https://a.example/v1", apiKey: "k" }
models:
${models}
plugins: ${JSON.stringify(plugins)}
`

describe("loadPlugins", () => {
  it.effect("loads the example plugin's default export by absolute path", () =>
    Effect.gen(function* () {
      const [plugin] = yield* loadPlugins([ECHO_MODULE])
      assert.strictEqual(plugin.id, "echo")
      assert.deepStrictEqual(plugin.pricingKeys, { allowed: ["perCall", "output"], required: ["perCall"] })
    })
  )

  it.effect("accepts a module that exports the plugin as `plugin` instead of `default`", () =>
    Effect.gen(function* () {
      const file = moduleFile("named.mjs", pluginSource("", "export { plugin }"))
      const [plugin] = yield* loadPlugins([file])
      assert.strictEqual(plugin.id, "acme")
    })
  )

  it.effect("names the module that does not exist", () =>
    Effect.gen(function* () {
      const missing = join(dir, "does-not-exist.ts")
      const issues = yield* issuesOf(loadPlugins([missing]))
      assert.strictEqual(issues.length, 1)
      assert.include(issues[0], `plugins: cannot load ${missing}: `)
    })
  )

  it.effect("names the package that is not installed", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(loadPlugins(["@acme/tollgate-plugin-missing"]))
      assert.include(issues[0], "plugins: cannot load @acme/tollgate-plugin-missing: ")
    })
  )

  it.effect("names a module that throws while it loads", () =>
    Effect.gen(function* () {
      const file = moduleFile("throws.mjs", `throw new Error("the plugin's own start-up failed")`)
      const issues = yield* issuesOf(loadPlugins([file]))
      assert.deepStrictEqual(issues, [`plugins: cannot load ${file}: the plugin's own start-up failed`])
    })
  )

  it.effect("lists every shape problem of a module that exports the wrong thing", () =>
    Effect.gen(function* () {
      const file = moduleFile("wrong.mjs", `export default { id: 42, kind: "video", pricing: {} }`)
      const issues = yield* issuesOf(loadPlugins([file]))
      const prefix = `plugins: ${file}: `
      for (const issue of issues) assert.isTrue(issue.startsWith(prefix), issue)
      assert.deepStrictEqual(
        issues.map((issue) => issue.slice(prefix.length).split(":")[0]),
        [
          "specificationVersion",
          "id",
          "family",
          "pricing.estimate",
          "pricing.price",
          "endpoint",
          "request",
          "invoke",
          "pricingKeys"
        ]
      )
      assert.include(issues[0], `specificationVersion: expected "v1"`)
      // "video" is not a built-in kind ("videos" is): a new kind must bring its endpoint and request schema.
      assert.include(issues[5], "endpoint: expected")
    })
  )

  it.effect("says so when a module has no default export and no `plugin`", () =>
    Effect.gen(function* () {
      const file = moduleFile("nothing.mjs", "export const other = 1")
      const issues = yield* issuesOf(loadPlugins([file]))
      assert.deepStrictEqual(issues, [`plugins: ${file}: the module's default export is not an object`])
    })
  )

  it.effect("refuses a plugin written for another contract version", () =>
    Effect.gen(function* () {
      const file = moduleFile("v2.mjs", pluginSource(`specificationVersion: "v2",`))
      const issues = yield* issuesOf(loadPlugins([file]))
      assert.deepStrictEqual(issues, [
        `plugins: ${file}: specificationVersion: the plugin implements v2 of the plugin spec (@tollgate/plugin-spec@2.x), but this gateway serves v1 only (@tollgate/plugin-spec@1.x): use a release of the plugin built against @tollgate/plugin-spec@1.x, or a gateway that serves v2`
      ])
    })
  )

  it.effect("refuses a version that is not one at all by the expected value", () =>
    Effect.gen(function* () {
      const file = moduleFile("v1.0.mjs", pluginSource(`specificationVersion: "1.0",`))
      const issues = yield* issuesOf(loadPlugins([file]))
      assert.deepStrictEqual(issues, [`plugins: ${file}: specificationVersion: expected "v1"`])
    })
  )

  // An operator with two broken modules learns about both at once.
  it.effect("reports every module that cannot be loaded, not just the first", () =>
    Effect.gen(function* () {
      const first = join(dir, "missing-1.ts")
      const second = moduleFile("bad-shape.mjs", "export default {}")
      const issues = yield* issuesOf(loadPlugins([first, second]))
      assert.isTrue(issues.some((issue) => issue.startsWith(`plugins: cannot load ${first}: `)))
      assert.isTrue(issues.some((issue) => issue.startsWith(`plugins: ${second}: `)))
    })
  )

  // Without this check the gateway would die at start with a TypeError instead of a config error naming the module.
  it.effect("refuses a plugin whose pricingKeys has no `required` list, naming the module", () =>
    Effect.gen(function* () {
      const file = moduleFile("no-required.mjs", pluginSource(`pricingKeys: { allowed: ["perCall"] },`))
      // Today: dies with "TypeError: keys.required is not iterable" (at ModelPricing.ts pricingIssues).
      const issues = yield* issuesOf(
        registry(config(`  - { id: m, plugin: acme, upstreams: [a], pricing: { perCall: "1" } }`, [file]))
      )
      assert.deepStrictEqual(issues, [`plugins: ${file}: pricingKeys.required: expected an array`])
    })
  )

  // The plugin's mistake is reported as the plugin's, not as the operator's config.
  // Keys are the plugin's own (`perSearchUnit`), but each must be a name an operator can write in `pricing:`.
  it.effect("refuses a plugin whose pricingKeys are not price key names, or require a key they do not allow", () =>
    Effect.gen(function* () {
      const file = moduleFile(
        "unknown-key.mjs",
        pluginSource(`pricingKeys: { allowed: ["perCall", "per token"], required: ["Tokens"] },`)
      )
      const issues = yield* issuesOf(loadPlugins([file]))
      assert.deepStrictEqual(
        issues.map((issue) => issue.split(": ")[2]),
        ["pricingKeys.allowed", "pricingKeys.required", "pricingKeys.required"]
      )
      assert.include(issues[0], "per token")
      assert.include(issues[2], "Tokens is not in pricingKeys.allowed")
    })
  )
})

describe("the registry built from the operator config", () => {
  it.effect("maps each model to its plugin, with the model's prices and output cap, and lists it", () =>
    Effect.gen(function* () {
      const built = yield* registry(
        config(`
  - { id: gpt-x, plugin: text, upstreams: [a], pricing: { input: "0.15", output: "0.60" } }
  - { id: echo-1, plugin: echo, upstreams: [a], pricing: { perCall: "0.001" }, maxOutputTokens: 64 }`)
      )
      const echo = built.lookup("echo-1")
      assert.strictEqual(echo?.plugin.id, "echo")
      assert.strictEqual(echo?.model.maxOutputTokens, 64)
      assert.strictEqual(echo?.model.upstreamModel, "echo-1")
      assert.strictEqual(echo?.model.pricing.perCall, 1_000n)
      assert.strictEqual(built.lookup("gpt-x")?.plugin.id, "text")
      assert.strictEqual(built.lookup("gpt-x")?.model.maxOutputTokens, DEFAULT_MAX_OUTPUT_TOKENS)
      assert.isUndefined(built.lookup("nope"))
      assert.deepStrictEqual([...built.plugins.keys()].sort(), ["echo", "text"])
      assert.deepStrictEqual(
        built.catalog.map((m) => [m.id, m.ownedBy]),
        [
          ["gpt-x", "owner:gpt-x"],
          ["echo-1", "owner:echo-1"]
        ]
      )
    })
  )

  it.effect("names a model whose plugin nobody declares, listing the known ones", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        registry(config(`  - { id: m, plugin: ech0, upstreams: [a], pricing: { perCall: "1" } }`))
      )
      assert.strictEqual(issues.length, 1)
      assert.match(issues[0], /^models\[0\]\.plugin: no such plugin \(known: .*\)$/)
      assert.include(issues[0], "echo")
      assert.include(issues[0], "text")
    })
  )

  it.effect("names a price the loaded plugin does not bill by, and a required one that is missing", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        registry(
          config(`
  - { id: ok, plugin: echo, upstreams: [a], pricing: { perCall: "0.01", output: "1" } }
  - { id: bad, plugin: echo, upstreams: [a], pricing: { input: "0.15", output: "1" } }`)
        )
      )
      assert.deepStrictEqual(issues, [
        "models[1].pricing.input: does not apply to the echo plugin (allowed: perCall, output)",
        "models[1].pricing.perCall: required by the echo plugin"
      ])
    })
  )

  it.effect("names a family this registry was not given, at start, listing the ones it has", () =>
    Effect.gen(function* () {
      const issues = yield* issuesOf(
        registry(config(`  - { id: v, plugin: video, upstreams: [a], pricing: { output: "1" } }`, []))
      )
      assert.deepStrictEqual(issues, ["models[0].plugin: no such plugin (known: text)"])
    })
  )

  it.effect("resolves a relative plugin path against the config file's folder", () =>
    Effect.gen(function* () {
      const sub = join(dir, "conf")
      const file = join(sub, "tollgate.yaml")
      yield* Effect.sync(() => {
        mkdirSync(sub, { recursive: true })
        writeFileSync(join(sub, "local-plugin.mjs"), pluginSource(""))
        writeFileSync(
          file,
          config(`  - { id: m, plugin: acme, upstreams: [a], pricing: { perCall: "1" } }`, ["./local-plugin.mjs"])
        )
      })
      const loaded = yield* OperatorConfig.load(file).pipe(Effect.provide(NodeServices.layer))
      assert.deepStrictEqual(loaded.plugins, [join(sub, "local-plugin.mjs")])
      const [plugin] = yield* loadPlugins(loaded.plugins)
      assert.strictEqual(plugin.id, "acme")
    })
  )

  // A newcomer never silently takes over (and bills) another plugin's models.
  it.effect("refuses a plugin that declares an id already taken by a built-in or another plugin", () =>
    Effect.gen(function* () {
      const file = moduleFile(
        "shadow.mjs",
        pluginSource(`id: "text", pricingKeys: { allowed: ["input", "output"], required: ["input", "output"] },`)
      )
      const issues = yield* issuesOf(
        registry(config(`  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "1" } }`, [file]))
      )
      assert.strictEqual(issues.length, 1)
      assert.include(issues[0], "text")
    })
  )

  // A new kind brings its own endpoint, but never takes one the gateway serves, or another kind's.
  const endpointSource = (id: string, kind: string, path: string, extra = "") =>
    pluginSource(
      `id: "${id}", kind: "${kind}", endpoint: { method: "POST", path: "${path}" }, ${extra}
       request: { "~standard": { version: 1, vendor: "test", validate: (value) => ({ value }) } },`
    )

  it.effect("lists a kind's default model, and refuses two plugins of one kind that default to different models", () =>
    Effect.gen(function* () {
      const first = moduleFile(
        "mod-a.mjs",
        endpointSource("mod-a", "moderation", "/v1/moderations", `defaultModel: "m",`)
      )
      const second = moduleFile(
        "mod-b.mjs",
        endpointSource("mod-b", "moderation", "/v1/moderations", `defaultModel: "n",`)
      )
      const loaded = yield* parse(
        config(`  - { id: m, plugin: mod-a, upstreams: [a], pricing: { perCall: "1" } }`, [first])
      )
      const built = yield* buildRegistry(loaded, yield* loadPlugins([first]), (id) => id, 0)
      assert.deepStrictEqual(built.endpoints, [{ kind: "moderation", path: "/v1/moderations", defaultModel: "m" }])
      const issues = yield* issuesOf(
        registry(config(`  - { id: m, plugin: mod-a, upstreams: [a], pricing: { perCall: "1" } }`, [first, second]))
      )
      assert.deepStrictEqual(issues, [
        "plugins: 'mod-b' defaults kind 'moderation' to model 'n', another plugin to 'm'"
      ])
    })
  )

  it.effect("lists each new kind with its endpoint", () =>
    Effect.gen(function* () {
      const file = moduleFile("rank.mjs", endpointSource("ranker", "rank", "/v1/rank"))
      const loaded = yield* parse(
        config(`  - { id: r, plugin: ranker, upstreams: [a], pricing: { perCall: "1" } }`, [file])
      )
      const built = yield* buildRegistry(
        loaded,
        [makeTextPlugin(unusedClient), ...(yield* loadPlugins([file]))],
        (id) => id,
        0
      )
      assert.deepStrictEqual(built.endpoints, [{ kind: "rank", path: "/v1/rank" }])
      assert.strictEqual(built.entries.get("r")?.kind, "endpoint")
    })
  )

  it.effect("refuses a new kind that declares a path the gateway serves, or one another kind took", () =>
    Effect.gen(function* () {
      const taken = moduleFile("taken.mjs", endpointSource("squatter", "vectors", "/v1/embeddings"))
      const first = moduleFile("first.mjs", endpointSource("one", "rank", "/v1/rank"))
      const second = moduleFile("second.mjs", endpointSource("two", "order", "/v1/rank"))
      const issues = yield* issuesOf(
        registry(
          config(`  - { id: m, plugin: text, upstreams: [a], pricing: { input: "1", output: "1" } }`, [
            taken,
            first,
            second
          ])
        )
      )
      assert.deepStrictEqual(issues, [
        "plugins: 'squatter' declares /v1/embeddings, which the gateway serves itself",
        "plugins: 'two' declares /v1/rank, taken by kind 'rank'"
      ])
    })
  )
})
