/**
 * The YAML parser is loaded by the first YAML config, not by importing the config module (src/app/OperatorConfig.ts):
 * a gateway on the built-in catalog never loads it. Checked in a fresh process, where nothing else has loaded it.
 */
import { assert, describe, it } from "@effect/vitest"
import { inFreshProcess } from "../support/FreshProcess.ts"

const script = `
import { createRequire } from "node:module"
import { Effect } from "effect"
import { NodeServices } from "@effect/platform-node"
const { OperatorConfig } = await import("./src/app/OperatorConfig.ts")
const cache = createRequire(import.meta.url).cache
const loaded = () => Object.keys(cache).filter((path) => /[\\\\/]node_modules[\\\\/]yaml[\\\\/]/.test(path)).length
const text = "upstreams:\\n  u: { protocol: openai, baseUrl: 'http://127.0.0.1:1/v1', apiKey: k }\\nmodels:\\n  - { id: m, plugin: text, upstreams: [u], upstreamModel: x, pricing: { input: '0.10', output: '0.40' } }\\n"
const json = await Effect.runPromise(OperatorConfig.parse(JSON.stringify({ upstreams: {}, models: [] }), { format: "json" }).pipe(Effect.provide(NodeServices.layer), Effect.exit))
const afterJson = loaded()
const config = await Effect.runPromise(OperatorConfig.parse(text, { format: "yaml" }).pipe(Effect.provide(NodeServices.layer)))
console.log(JSON.stringify({ afterJson, afterYaml: loaded(), models: config.models.map((model) => model.id) }))
`

describe("the YAML parser", () => {
  it("is loaded by the first YAML config, not at import", { timeout: 60_000 }, () => {
    const result = inFreshProcess<{ afterJson: number; afterYaml: number; models: Array<string> }>(script)
    assert.strictEqual(result.afterJson, 0)
    assert.isAbove(result.afterYaml, 0)
    assert.deepStrictEqual(result.models, ["m"])
  })
})
