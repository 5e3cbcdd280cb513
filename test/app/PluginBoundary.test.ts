import { assert, describe, it } from "@effect/vitest"
import type {
  ChatCall,
  ChatPlugin,
  EndpointPlugin,
  PluginFailure,
  PluginModel,
  TokenCounter
} from "@tollgate/plugin-spec"
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

  it("hands a chat plugin's pure check and notes its model without any key", () => {
    const seen: Array<PluginModel> = []
    const chat = {
      specificationVersion: "v1",
      id: "chatty",
      family: "chatty",
      kind: "chat",
      pricingKeys: { allowed: ["perCall"], required: ["perCall"] },
      pricing: { estimate: () => 1n, price: () => 1n },
      invoke: () => Effect.die("unused"),
      check: (_client: unknown, _request: unknown, given: PluginModel) => {
        seen.push(given)
        return undefined
      },
      notes: (_client: unknown, _request: unknown, given: PluginModel) => {
        seen.push(given)
        return ["noted"]
      }
    } as unknown as ChatPlugin
    const wrapped = atBoundary(chat) as ChatPlugin
    const client = { dialect: "openai" as const, body: {} }
    const request = { messages: [] } as unknown as ChatCall["request"]
    assert.isUndefined(wrapped.check?.(client, request, model))
    assert.deepStrictEqual(wrapped.notes?.(client, request, model), ["noted"])
    assert.strictEqual(seen.length, 2)
    for (const given of seen) assert.notProperty(given.upstreams[0] as unknown as Record<string, unknown>, "apiKey")
  })

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
        Exit.fail({
          _tag: "PluginFailure",
          reason: "rate_limited",
          message: "the upstream is rate limiting; retry later",
          retryAfterSeconds: 3,
          detail: "the plugin said: slow down"
        })
      )
    })
  )

  it("gives the client the gateway's words for anything about the vendor, the plugin's for its own refusal", () => {
    const vendorSaid = "acme shard 7 is on fire"
    for (const [reason, upstreamStatus, message] of [
      ["invalid_request", 400, "the upstream rejected the request (HTTP 400)"],
      ["not_found", 404, "the upstream does not know the object asked for"],
      ["unavailable", 500, "the upstream failed (HTTP 500)"],
      ["unavailable", undefined, "the upstream failed"],
      ["overloaded", 529, "the upstream is overloaded; retry later"],
      ["timeout", undefined, "the upstream did not answer in time"],
      ["misconfigured", undefined, "the gateway cannot serve this model as configured"]
    ] as const) {
      const failure = inboundFailure({
        _tag: "PluginFailure",
        reason,
        message: `vendor: ${vendorSaid}`,
        code: "acme_code",
        ...(upstreamStatus === undefined ? {} : { upstreamStatus }),
        detail: "the body"
      })
      assert.strictEqual(failure.message, message)
      assert.strictEqual(failure.code, "acme_code", "a stable code the plugin chose is kept")
      assert.strictEqual(failure.detail, `the plugin said: vendor: ${vendorSaid}; the body`)
    }
    // A refusal made before any vendor was asked (no vendor status) is the plugin's to word: what the client must fix.
    const own: PluginFailure = {
      _tag: "PluginFailure",
      reason: "invalid_request",
      message: "Acme models take no tools",
      param: "tools"
    }
    assert.deepStrictEqual(inboundFailure(own), own)
  })

  it("turns anything else a plugin fails with into `unavailable`, its text in `detail` only", () => {
    const failure = inboundFailure(new Error("vendor said: internal error"))
    assert.strictEqual(failure.reason, "unavailable")
    assert.notInclude(failure.message, "vendor said")
    assert.include(failure.detail ?? "", "vendor said: internal error")
    assert.strictEqual(inboundFailure({ _tag: "PluginFailure", reason: "bogus", message: "x" }).reason, "unavailable")
  })
})
