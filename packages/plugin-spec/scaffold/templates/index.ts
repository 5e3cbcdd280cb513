/**
 * A Tollgate plugin of a new kind, `__KIND__`: `POST __PATH__` with `{ model?, input: string | string[] }`, priced per
 * input token (price key `input`, USD per 1M tokens) with the gateway's token counter, calling its vendor's
 * `POST /__KIND__` through the gateway's HTTP capability (the gateway adds the key). Replace the vendor call with yours.
 */
import type { EndpointCall, EndpointPlugin, EndpointReply, PluginFailure, PluginModel, TokenCounter } from "@tollgate/plugin-spec/endpoint"
import { Effect, Schema } from "effect"

const Body = Schema.Struct({
  model: Schema.NonEmptyString,
  input: Schema.Union([Schema.NonEmptyString, Schema.Array(Schema.NonEmptyString).check(Schema.isMinLength(1))])
})

export type Request = typeof Body.Type

export interface Usage {
  readonly [key: string]: number
  readonly inputTokens: number
}

const texts = (request: Request): ReadonlyArray<string> => (typeof request.input === "string" ? [request.input] : request.input)

/** Tokens of the input: the gateway's counter when given, else a bound of one token per character. */
export const inputTokens = (request: Request, tokens?: TokenCounter): number =>
  texts(request).reduce((sum, text) => sum + (tokens === undefined ? text.length : tokens.count(text)), 0)

const perMillion = (count: number, model: PluginModel): bigint => {
  const price = model.pricing.input ?? 0n
  return (BigInt(Math.max(0, Math.ceil(count))) * price + 999_999n) / 1_000_000n
}

const failure = (reason: PluginFailure["reason"], message: string): PluginFailure => ({ _tag: "PluginFailure", reason, message })

const invoke = (call: EndpointCall<Request>): Effect.Effect<EndpointReply<Usage>, PluginFailure> =>
  Effect.gen(function* () {
    const upstream = call.model.upstreams[0]
    if (upstream === undefined) return yield* Effect.fail(failure("misconfigured", `model ${call.model.id} has no upstream`))
    const response = yield* call.http.request({
      upstream,
      method: "POST",
      path: "/__KIND__",
      body: JSON.stringify({ model: call.model.upstreamModel, input: texts(call.request) }),
      signal: call.signal
    })
    const body = (yield* response.json) as { readonly results?: unknown }
    if (!Array.isArray(body.results)) return yield* Effect.fail(failure("unavailable", "the vendor sent no results"))
    const used = inputTokens(call.request, call.tokens)
    return {
      body: { object: "list", model: call.model.id, results: body.results, usage: { input_tokens: used } },
      usage: { inputTokens: used }
    }
  })

const plugin: EndpointPlugin<Request, Usage> = {
  specificationVersion: "v1",
  id: "__KIND__",
  family: "__KIND__",
  kind: "__KIND__",
  endpoint: { method: "POST", path: "__PATH__" },
  defaultModel: "__KIND__-1",
  request: Schema.toStandardSchemaV1(Body),
  pricingKeys: { allowed: ["input"], required: ["input"] },
  pricing: {
    estimate: (request, model, tokens) => perMillion(inputTokens(request, tokens), model),
    price: (usage, model) => perMillion(usage.inputTokens, model)
  },
  invoke
}

export default plugin
