/**
 * Hosted tools on a text model: served where the upstream speaks the client's protocol, elsewhere left out with a note
 * (the `x-tollgate-warning` header) or, when the operator set `hostedTools: refuse`, refused by the gateway with its
 * own code and the field's path.
 */
import { assert, describe, it } from "@effect/vitest"
import { Redacted } from "effect"
import type { PluginModel, UpstreamConfig } from "../../../src/plugins/ModelPlugin.ts"
import { makeTextPlugin } from "../../../src/plugins/text/TextPlugin.ts"
import { openAIRequestToIR } from "../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { responsesRequestToIR } from "../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { ok } from "./convert/helpers.ts"

const plugin = makeTextPlugin({} as never)

const upstream = (protocol: string): UpstreamConfig =>
  ({ name: protocol, protocol, baseUrl: "http://x", apiKey: Redacted.make("k") }) as unknown as UpstreamConfig

const model = (protocol: string, hostedTools?: "omit" | "refuse"): PluginModel => ({
  id: "m",
  upstreams: [upstream(protocol)],
  upstreamModel: "m",
  pricing: {},
  maxOutputTokens: 100,
  ...(hostedTools === undefined ? {} : { hostedTools })
})

const body = {
  model: "m",
  input: "search",
  tools: [
    { type: "function", name: "f", parameters: { type: "object" } },
    { type: "web_search", external_web_access: false }
  ]
}
const client = { dialect: "responses" as const, body }
const request = ok(responsesRequestToIR(body))

describe("a Responses client's hosted tools", () => {
  it("are the upstream's to run on an openai-responses upstream: no note, no refusal", () => {
    for (const setting of [undefined, "refuse"] as const) {
      assert.isUndefined(plugin.check?.(client, request, model("openai-responses", setting)))
      assert.deepStrictEqual(plugin.notes?.(client, request, model("openai-responses", setting)), [])
    }
  })

  it("web_search runs as Anthropic's own search on an anthropic upstream: no note, no refusal", () => {
    assert.isUndefined(plugin.check?.(client, request, model("anthropic", "refuse")))
    assert.deepStrictEqual(plugin.notes?.(client, request, model("anthropic")), [])
    // Any other hosted tool is not Anthropic's to run.
    const other = ok(responsesRequestToIR({ ...body, tools: [{ type: "file_search", vector_store_ids: ["v"] }] }))
    assert.strictEqual(plugin.check?.(client, other, model("anthropic", "refuse"))?.param, "tools.0")
  })

  it("web_search runs as Google Search grounding on a gemini upstream when no function tool is beside it", () => {
    const alone = ok(responsesRequestToIR({ ...body, tools: [{ type: "web_search" }] }))
    assert.isUndefined(plugin.check?.(client, alone, model("gemini", "refuse")))
    assert.deepStrictEqual(plugin.notes?.(client, alone, model("gemini")), [])
  })

  it("are left out elsewhere, with a note naming the field", () => {
    for (const protocol of ["openai", "gemini"]) {
      assert.isUndefined(plugin.check?.(client, request, model(protocol)))
      assert.deepStrictEqual(plugin.notes?.(client, request, model(protocol, "omit")), [
        "tools.1: the hosted tool 'web_search' was left out (this model's upstream does not run it)"
      ])
    }
  })

  it("are refused elsewhere when the operator says so: the gateway's own code, the field's path", () => {
    for (const protocol of ["openai", "gemini"]) {
      const refusal = plugin.check?.(client, request, model(protocol, "refuse"))
      assert.strictEqual(refusal?.reason, "invalid_request")
      assert.strictEqual(refusal?.code, "unsupported_tool")
      assert.strictEqual(refusal?.param, "tools.1")
      assert.isUndefined(refusal?.upstreamStatus)
      assert.deepStrictEqual(plugin.notes?.(client, request, model(protocol, "refuse")), [])
    }
  })
})

describe("chat completions' web_search_options", () => {
  const chat = { model: "m", messages: [{ role: "user", content: "hi" }], web_search_options: {} }
  const ir = ok(openAIRequestToIR(chat))

  it("is run by openai, anthropic and gemini upstreams; on gemini not beside function tools (left out or refused)", () => {
    const openaiClient = { dialect: "openai" as const, body: chat }
    for (const protocol of ["openai", "anthropic", "gemini"]) {
      assert.deepStrictEqual(plugin.notes?.(openaiClient, ir, model(protocol)), [])
    }
    const withTool = { ...chat, tools: [{ type: "function", function: { name: "f", parameters: { type: "object" } } }] }
    const toolIr = ok(openAIRequestToIR(withTool))
    const toolClient = { dialect: "openai" as const, body: withTool }
    assert.deepStrictEqual(plugin.notes?.(toolClient, toolIr, model("gemini")), [
      "web_search_options: the hosted tool 'web_search' was left out (this model's upstream does not run it)"
    ])
    assert.strictEqual(plugin.check?.(toolClient, toolIr, model("gemini", "refuse"))?.param, "web_search_options")
    assert.deepStrictEqual(plugin.notes?.(toolClient, toolIr, model("anthropic")), [])
  })
})
