import { assert, describe, it } from "@effect/vitest"
import type { ChatCall, ChatPlugin, EndpointPlugin, PluginModel, TokenCounter } from "@tollgate/plugin-spec"
import { Effect, Exit, Redacted } from "effect"
import { atBoundary, inboundFailure } from "../../src/app/PluginBoundary.ts"
import type { UpstreamConfig } from "../../src/app/config/OperatorConfigData.ts"

const upstream: UpstreamConfig = {
  name: "vendor",
  protocol: "openai",
  baseUrl: "http://127.0.0.1:9/v1",
  apiKey: Redacted.make("sk-never-shown"),
  timeoutMs: 1_000,
  idleTimeoutMs: 1_000,
  maxConnections: 1
}
const model: PluginModel = {
  id: "m",
  upstreams: [upstream],
  upstreamModel: "m",
  pricing: { perCall: 5n },
  maxOutputTokens: 0
}

/** A plugin that reports what it was handed, and fails with whatever `failWith` holds. */
const probe = (seen: Array<unknown>, failWith?: unknown): EndpointPlugin =>
  ({
    specificationVersion: "v1",
    id: "probe",
    family: "probe",
    kind: "probe",
    endpoint: { method: "POST", path: "/v1/probe" },
    request: { "~standard": { version: 1, vendor: "test", validate: (value: unknown) => ({ value }) } },
    pricingKeys: { allowed: ["perCall"], required: ["perCall"] },
    pricing: {
      estimate: (_request: unknown, given: PluginModel) => {
        seen.push(given)
        return 1n
      },
      price: () => 1n
    },
    invoke: (call: { readonly model: PluginModel }) => {
      seen.push(call.model)
      return failWith === undefined ? Effect.succeed({ body: {}, usage: {} }) : Effect.fail(failWith)
    }
  }) as unknown as EndpointPlugin

describe("PluginBoundary", () => {
  it.effect("hands a plugin from the operator config its models without any key, in calls and in pricing", () =>
    Effect.gen(function* () {
      const seen: Array<unknown> = []
      const plugin = atBoundary(probe(seen)) as EndpointPlugin
      plugin.pricing.estimate({ model: "m" }, model)
      const call = { model, request: { model: "m" }, requestId: "r", signal: new AbortController().signal }
      yield* plugin.invoke({ ...call, http: { request: () => Effect.die("unused") } })
      assert.strictEqual(seen.length, 2)
      for (const given of seen) {
        const first = (given as PluginModel).upstreams[0] as unknown as Record<string, unknown>
        assert.notProperty(first, "apiKey")
        assert.strictEqual(first.name, "vendor")
      }
      assert.strictEqual(plugin.id, "probe")
      assert.deepStrictEqual(plugin.endpoint, { method: "POST", path: "/v1/probe" })
    })
  )

  it.effect(
    "gives every call of a plugin from the operator config the gateway's HTTP capability, whatever its kind",
    () =>
      Effect.gen(function* () {
        const given: Array<unknown> = []
        const http = { request: () => Effect.die("not called") }
        const chat = {
          specificationVersion: "v1",
          id: "chatty",
          family: "chatty",
          kind: "chat",
          pricingKeys: { allowed: ["perCall"], required: ["perCall"] },
          pricing: { estimate: () => 1n, price: () => 1n },
          invoke: (call: { readonly http?: unknown }) => {
            given.push(call.http)
            return Effect.succeed({ _tag: "Body", dialect: "openai", body: {} })
          }
        } as unknown as ChatPlugin
        const wrapped = atBoundary(chat, { http }) as ChatPlugin
        yield* wrapped.invoke({
          model,
          request: { messages: [] } as unknown as ChatCall["request"],
          client: { dialect: "openai", body: {} },
          requestId: "r",
          signal: new AbortController().signal
        })
        assert.deepStrictEqual(given, [http])
      })
  )

  it("gives a loaded plugin's pricing the gateway's token counter", () => {
    const counted: Array<unknown> = []
    const plugin = {
      ...probe([]),
      pricing: {
        estimate: (request: { readonly text: string }, _model: PluginModel, tokens?: TokenCounter) => {
          counted.push(tokens?.encoding)
          return BigInt(tokens?.count(request.text) ?? 0)
        },
        price: () => 0n
      }
    } as unknown as EndpointPlugin
    const tokens: TokenCounter = { encoding: "o200k_base", count: (text) => text.split(" ").length }
    const wrapped = atBoundary(plugin, { tokens })
    assert.strictEqual(wrapped.pricing.estimate({ model: "m", text: "three words here" } as never, model), 3n)
    assert.deepStrictEqual(counted, ["o200k_base"])
  })

  it.effect("reads a failure by its shape, copying only the spec's fields", () =>
    Effect.gen(function* () {
      class Foreign extends Error {
        readonly _tag = "PluginFailure"
        readonly reason = "rate_limited"
        readonly retryAfterSeconds = 3
        readonly secret = "not copied"
      }
      const plugin = atBoundary(probe([], new Foreign("slow down"))) as EndpointPlugin
      const call = { model, request: { model: "m" }, requestId: "r", signal: new AbortController().signal }
      const exit = yield* Effect.exit(plugin.invoke({ ...call, http: { request: () => Effect.die("unused") } }))
      assert.deepStrictEqual(
        exit,
        Exit.fail({ _tag: "PluginFailure", reason: "rate_limited", message: "slow down", retryAfterSeconds: 3 })
      )
    })
  )

  it("turns anything else a plugin fails with into `unavailable`, its text in `detail` only", () => {
    const failure = inboundFailure(new Error("vendor said: internal error"))
    assert.strictEqual(failure.reason, "unavailable")
    assert.notInclude(failure.message, "vendor said")
    assert.include(failure.detail ?? "", "vendor said: internal error")
    assert.strictEqual(inboundFailure({ _tag: "PluginFailure", reason: "bogus", message: "x" }).reason, "unavailable")
  })
})
