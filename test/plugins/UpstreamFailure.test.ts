/**
 * A plugin's call is one attempt on the upstream routing chose (`onUpstream`): failover between deployments is
 * decided once, in routing, from that attempt's failure; a plugin never moves on to another upstream of its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Result } from "effect"
import fc from "fast-check"
import type { UpstreamClient, UpstreamRequest } from "../../src/adapters/upstream/UpstreamClient.ts"
import {
  ConnectFailed,
  HttpStatus,
  Timeout,
  UpstreamError,
  type UpstreamErrorReason
} from "../../src/adapters/upstream/UpstreamError.ts"
import type { PluginFailure, PluginModel, UpstreamConfig } from "../../src/plugins/ModelPlugin.ts"
import { makeTextPlugin } from "../../src/plugins/text/TextPlugin.ts"
import { openAIRequestToIR } from "../../src/plugins/text/convert/openaiRequestToIR.ts"
import { failureFromUpstream, onUpstream } from "../../src/plugins/UpstreamFailure.ts"

const upstream = (name: string): UpstreamConfig => ({
  name,
  protocol: "openai",
  baseUrl: `http://${name}.invalid/v1`,
  timeoutMs: 1_000,
  idleTimeoutMs: 1_000,
  maxConnections: 1
})

const modelOn = (upstreams: ReadonlyArray<UpstreamConfig>): PluginModel => ({
  id: "m",
  upstreams,
  upstreamModel: "vendor-m",
  pricing: {},
  maxOutputTokens: 64
})

/** Every way an upstream can fail, the ones another upstream might not repeat included. */
const reasons: fc.Arbitrary<UpstreamErrorReason> = fc.oneof(
  fc
    .constantFrom(401, 403, 408, 429, 500, 502, 503, 529)
    .map((status) => new HttpStatus({ status, body: "{}", isRetryable: status !== 401 && status !== 403 })),
  fc.constant(new ConnectFailed({ code: "ECONNREFUSED", detail: "refused" })),
  fc.constant(new Timeout({ phase: "headers", timeoutMs: 1_000 }))
)

describe("onUpstream", () => {
  it("makes one attempt, on the first upstream, whatever its failure: another is routing's to try", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), reasons, (count, reason) => {
        const upstreams = Array.from({ length: count }, (_, i) => upstream(`u${i}`))
        const tried: Array<string> = []
        const error = new UpstreamError({ upstream: "u0", reason })
        const exit = Effect.runSyncExit(
          onUpstream(modelOn(upstreams), upstreams, "text", (chosen) =>
            Effect.suspend(() => {
              tried.push(chosen.name)
              return Effect.fail(error)
            })
          )
        )
        assert.deepStrictEqual(tried, ["u0"])
        assert.deepStrictEqual(exit, Exit.fail(failureFromUpstream(error)))
      })
    )
  })

  it("passes the plugin's own failure on as it is, and an answer through", () => {
    const own: PluginFailure = { _tag: "PluginFailure", reason: "invalid_request", message: "no such voice" }
    const upstreams = [upstream("u0")]
    assert.deepStrictEqual(
      Effect.runSyncExit(onUpstream(modelOn(upstreams), upstreams, "speech", () => Effect.fail(own))),
      Exit.fail(own)
    )
    assert.strictEqual(Effect.runSync(onUpstream(modelOn(upstreams), upstreams, "speech", () => Effect.succeed(7))), 7)
  })

  it("calls a model without an upstream the family can call misconfigured", () => {
    const exit = Effect.runSyncExit(onUpstream(modelOn([upstream("u0")]), [], "image", () => Effect.succeed(1)))
    assert.isTrue(Exit.isFailure(exit))
    const failure = Exit.findErrorOption(exit)
    assert.strictEqual(failure._tag === "Some" ? failure.value.reason : undefined, "misconfigured")
  })
})

describe("the text plugin's call", () => {
  it("is one request to the first upstream it can call, even when that upstream is overloaded", async () => {
    const sent: Array<string> = []
    const client = {
      request: (request: UpstreamRequest) =>
        Effect.suspend(() => {
          sent.push(request.upstream.name)
          return Effect.fail(
            new UpstreamError({
              upstream: request.upstream.name,
              reason: new HttpStatus({ status: 503, body: "{}", isRetryable: true })
            })
          )
        })
    } as unknown as UpstreamClient["Service"]
    const body = { model: "m", messages: [{ role: "user", content: "hi" }] }
    const request = openAIRequestToIR(body)
    assert.isTrue(Result.isSuccess(request))
    if (!Result.isSuccess(request)) return
    const exit = await Effect.runPromiseExit(
      makeTextPlugin(client).invoke({
        model: modelOn([upstream("first"), upstream("second")]),
        request: request.success,
        client: { dialect: "openai", body },
        requestId: "req_1",
        signal: new AbortController().signal
      })
    )
    assert.deepStrictEqual(sent, ["first"])
    const failure = Exit.findErrorOption(exit)
    assert.strictEqual(failure._tag === "Some" ? failure.value.reason : undefined, "overloaded")
  })
})
