/**
 * A plugin as a third party ships it, for test/packages/plugin-spec/ExternalPlugin.test.ts: the test copies this file
 * into a folder outside the repository, next to the packed `@tollgate/plugin-spec` and a copy of `effect` of its own,
 * compiles it with plain `tsc` and lists the JavaScript in the operator config. A new kind, `score` at
 * `POST /v1/scores`, priced per input item (`perItem`), calling its vendor's `POST /score` through the gateway's HTTP
 * capability, `model` optional (default `score-1`). Its reply says which `effect` it runs on and what it was told of its
 * upstream, for the test to check.
 */
import type { EndpointCall, EndpointPlugin, EndpointReply, PluginFailure } from "@tollgate/plugin-spec/endpoint"
import { Data, Effect, Schema } from "effect"

const ScoreBody = Schema.Struct({
  model: Schema.NonEmptyString,
  input: Schema.Array(Schema.String).check(Schema.isBetweenLength(1, 50))
})

type ScoreRequest = typeof ScoreBody.Type

interface ScoreUsage {
  readonly [key: string]: number
  readonly items: number
}

/** A failure made by this plugin's own copy of `effect`: the gateway must read it by its shape alone. */
class RefusedInput extends Data.TaggedError("PluginFailure")<{
  readonly reason: "invalid_request"
  readonly message: string
  readonly code: string
  readonly param: string
}> {}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const invoke = (call: EndpointCall<ScoreRequest>): Effect.Effect<EndpointReply<ScoreUsage>, PluginFailure> =>
  Effect.gen(function* () {
    const upstream = call.model.upstreams[0]
    if (upstream === undefined) {
      return yield* Effect.fail<PluginFailure>({
        _tag: "PluginFailure",
        reason: "misconfigured",
        message: "no upstream"
      })
    }
    if (call.request.input.includes("refuse-me")) {
      return yield* new RefusedInput({
        reason: "invalid_request",
        message: "this plugin refuses the input 'refuse-me'",
        code: "refused_input",
        param: "input"
      })
    }
    const response = yield* call.http.request({
      upstream,
      method: "POST",
      path: "/score",
      body: JSON.stringify({ model: call.model.upstreamModel, input: call.request.input }),
      signal: call.signal
    })
    const body = yield* response.json
    const scores = isRecord(body) && Array.isArray(body.scores) ? body.scores : []
    const items = call.request.input.length
    return {
      body: {
        object: "list",
        model: call.model.id,
        data: scores.map((score, index) => ({ index, score })),
        usage: { items },
        plugin: { effect: import.meta.resolve("effect"), upstreamFields: Object.keys(upstream).sort() }
      },
      usage: { items }
    }
  })

const plugin: EndpointPlugin<ScoreRequest, ScoreUsage> = {
  specificationVersion: "v1",
  id: "score",
  family: "score",
  kind: "score",
  endpoint: { method: "POST", path: "/v1/scores" },
  // As OpenAI's moderations default their model: a body without `model` is for this one.
  defaultModel: "score-1",
  request: Schema.toStandardSchemaV1(ScoreBody),
  pricingKeys: { allowed: ["perItem"], required: ["perItem"] },
  pricing: {
    estimate: (request, model) => BigInt(request.input.length) * (model.pricing.perItem ?? 0n),
    price: (usage, model) => BigInt(usage.items) * (model.pricing.perItem ?? 0n)
  },
  invoke
}

export default plugin
