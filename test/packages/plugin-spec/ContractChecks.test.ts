/**
 * Each check of the spec's contract suites catches the bug it is for: a correct plugin passes every check, and a
 * plugin with one planted bug (a wrong price, an estimate below what a reply costs, a hang on abort, an answer despite
 * the abort, a defect, a wrong failure reason, a reply of the wrong shape, a schema that accepts anything) fails the
 * check meant for it — and only that one.
 */
import { assert, describe, it } from "@effect/vitest"
import type {
  EndpointCall,
  EndpointPlugin,
  EndpointReply,
  PluginFailure,
  PluginModel,
  UpstreamHttp
} from "@tollgate/plugin-spec"
import { type EndpointFixtures, endpointContractChecks } from "@tollgate/plugin-spec/contract"
import { Effect, Schema } from "effect"
import fc from "fast-check"

const Body = Schema.Struct({
  model: Schema.NonEmptyString,
  items: Schema.Array(Schema.String).check(Schema.isMinLength(1))
})
type Tally = typeof Body.Type
interface TallyUsage {
  readonly [key: string]: number
  readonly items: number
}

const cancelled: PluginFailure = { _tag: "PluginFailure", reason: "cancelled", message: "the request was cancelled" }

/** The vendor: answers how many items it counted, or refuses model `refuse` with a 400's reason. */
const http: UpstreamHttp = {
  request: (request) => {
    if (request.signal.aborted) return Effect.fail(cancelled)
    const body = JSON.parse(String(request.body)) as { model: string; items: ReadonlyArray<string> }
    if (body.model === "refuse") {
      return Effect.fail({ _tag: "PluginFailure", reason: "invalid_request", message: "refused", upstreamStatus: 400 })
    }
    return Effect.succeed({
      status: 200,
      headers: {},
      json: Effect.succeed({ counted: body.items.length }),
      text: Effect.succeed(""),
      // The tally vendor answers whole bodies only.
      chunks: async function* () {},
      events: async function* () {}
    })
  }
}

const perItem = (model: PluginModel) => model.pricing.perItem ?? 0n

const invoke = (call: EndpointCall<Tally>): Effect.Effect<EndpointReply<TallyUsage>, PluginFailure> =>
  Effect.gen(function* () {
    const upstream = call.model.upstreams[0]
    if (upstream === undefined) return yield* Effect.fail({ ...cancelled, reason: "misconfigured" as const })
    const response = yield* call.http.request({
      upstream,
      method: "POST",
      path: "/tally",
      body: JSON.stringify({ model: call.model.upstreamModel, items: call.request.items }),
      signal: call.signal
    })
    const { counted } = (yield* response.json) as { counted: number }
    return { body: { counted }, usage: { items: counted } }
  })

const correct: EndpointPlugin<Tally, TallyUsage> = {
  specificationVersion: "v1",
  id: "tally",
  family: "tally",
  kind: "tally",
  endpoint: { method: "POST", path: "/v1/tally" },
  request: Schema.toStandardSchemaV1(Body),
  pricingKeys: { allowed: ["perItem"], required: ["perItem"] },
  pricing: {
    estimate: (request, model) => BigInt(request.items.length) * perItem(model),
    price: (usage, model) => BigInt(usage.items) * perItem(model)
  },
  invoke
}

const model = (id: string, upstreamModel = id): PluginModel => ({
  id,
  upstreams: [
    {
      name: "vendor",
      protocol: "openai",
      baseUrl: "http://127.0.0.1:9",
      timeoutMs: 1_000,
      idleTimeoutMs: 1_000,
      maxConnections: 1
    }
  ],
  upstreamModel,
  pricing: { perItem: 1_000n },
  maxOutputTokens: 0
})

const fixtures: EndpointFixtures<Tally, TallyUsage> = {
  models: [model("tally-1")],
  requests: [{ name: "two items", body: { model: "tally-1", items: ["a", "b"] } }],
  invalidBodies: [{ model: "tally-1", items: [] }, { items: ["a"] }],
  inputs: fc.record({ model: fc.constant("tally-1"), items: fc.array(fc.string(), { minLength: 1, maxLength: 20 }) }),
  usageWithin: (request) => fc.record({ items: fc.integer({ min: 0, max: request.items.length }) }),
  failing: [
    {
      name: "a request the vendor refuses",
      model: model("refused", "refuse"),
      body: { model: "refused", items: ["a"] },
      reason: "invalid_request"
    }
  ],
  http
}

const CHECKS = {
  endpoint: "declares an endpoint under /v1 and a request schema",
  schema: "accepts every fixture body and refuses the invalid ones",
  shape: "has the shape the gateway accepts",
  pricing: "prices purely, in non-negative bigint micro-dollars, never more than the estimate for covered usage",
  answers: "answers two items with usage its estimate covers",
  abort: "stops two items, or fails it cleanly, when the signal is already aborted",
  failing: "fails a request the vendor refuses with reason invalid_request, never a defect"
} as const

/** Which checks reject for this plugin (and fixtures), by their key above. */
const failedChecks = async (
  plugin: EndpointPlugin<Tally, TallyUsage>,
  overrides: Partial<EndpointFixtures<Tally, TallyUsage>> = {}
): Promise<ReadonlyArray<string>> => {
  const checks = endpointContractChecks(plugin, { ...fixtures, timeoutMs: 300, ...overrides })
  assert.deepStrictEqual(
    checks.map((check) => check.name),
    Object.values(CHECKS)
  )
  const failed: Array<string> = []
  for (const check of checks) {
    const outcome = await check.run().then(
      () => "passed",
      (error: unknown) => `failed: ${error instanceof Error ? error.message : String(error)}`
    )
    if (outcome !== "passed") {
      failed.push((Object.entries(CHECKS).find(([, name]) => name === check.name) as [string, string])[0])
    }
  }
  return failed
}

const invokeWith =
  (change: (call: EndpointCall<Tally>) => Effect.Effect<EndpointReply<TallyUsage>, PluginFailure> | undefined) =>
  (call: EndpointCall<Tally>) =>
    change(call) ?? invoke(call)

describe("the contract suites catch a planted bug in each check", () => {
  it("a correct plugin passes every check", async () => {
    assert.deepStrictEqual(await failedChecks(correct), [])
  })

  it("shape: a plugin without its price function, or of another kind than it declares", async () => {
    const { price: _price, ...withoutPrice } = correct.pricing
    assert.deepStrictEqual(
      await failedChecks({ ...correct, pricing: withoutPrice as typeof correct.pricing, invoke }).then((failed) =>
        failed.includes("shape")
      ),
      true
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, specificationVersion: "v2" as "v1" }), ["shape"])
  })

  it("endpoint: a path outside /v1", async () => {
    const failed = await failedChecks({ ...correct, endpoint: { method: "POST", path: "/tally" as `/v1/${string}` } })
    assert.deepStrictEqual(failed, ["endpoint", "shape"])
  })

  it("schema: a request schema that accepts anything", async () => {
    const anything = Schema.toStandardSchemaV1(Schema.Unknown) as unknown as typeof correct.request
    assert.deepStrictEqual(await failedChecks({ ...correct, request: anything }), ["schema"])
  })

  it("pricing: a price above the estimate, a float, an impure estimate", async () => {
    const twice = {
      ...correct.pricing,
      price: (usage: TallyUsage, m: PluginModel) => 2n * BigInt(usage.items) * perItem(m)
    }
    assert.deepStrictEqual(await failedChecks({ ...correct, pricing: twice }), ["pricing", "answers"])
    const float = { ...correct.pricing, price: (usage: TallyUsage) => (usage.items * 0.5) as unknown as bigint }
    assert.deepStrictEqual(await failedChecks({ ...correct, pricing: float }), ["pricing", "answers"])
    let calls = 0n
    const impure = {
      ...correct.pricing,
      estimate: (request: Tally, m: PluginModel) => BigInt(request.items.length) * perItem(m) + calls++
    }
    assert.deepStrictEqual(await failedChecks({ ...correct, pricing: impure }), ["pricing"])
  })

  it("answers: an estimate below what the reply costs (usage over the hold), a reply of the wrong shape, a defect", async () => {
    const overReported = invokeWith((call) =>
      Effect.map(invoke(call), (reply) => ({ ...reply, usage: { items: reply.usage.items + 5 } }))
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: overReported }), ["answers"])
    const bodyless = invokeWith((call) =>
      call.signal.aborted || call.model.upstreamModel === "refuse"
        ? undefined
        : Effect.succeed({ usage: { items: 1 } } as unknown as EndpointReply<TallyUsage>)
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: bodyless }), ["answers"])
    const dies = invokeWith((call) =>
      call.request.items.length === 2 && !call.signal.aborted ? Effect.die("boom") : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: dies }), ["answers"])
  })

  it("abort: a plugin that answers although aborted, one that hangs, one that dies", async () => {
    const deaf: UpstreamHttp = {
      request: (request) => http.request({ ...request, signal: new AbortController().signal })
    }
    assert.deepStrictEqual(await failedChecks(correct, { http: deaf }), ["abort"])
    const hangs = invokeWith((call) => (call.signal.aborted ? Effect.never : undefined))
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: hangs }), ["abort"])
    const dies = invokeWith((call) => (call.signal.aborted ? Effect.die("aborted badly") : undefined))
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: dies }), ["abort"])
  })

  it("failing: a wrong failure reason, a failing call that answers, a failure that is a defect", async () => {
    const unavailable = invokeWith((call) =>
      call.model.upstreamModel === "refuse"
        ? Effect.fail({ _tag: "PluginFailure", reason: "unavailable", message: "could not reach anything" })
        : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: unavailable }), ["failing"])
    const answers = invokeWith((call) =>
      call.model.upstreamModel === "refuse" ? Effect.succeed({ body: {}, usage: { items: 1 } }) : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: answers }), ["failing"])
    const throws = invokeWith((call) =>
      call.model.upstreamModel === "refuse" ? Effect.die(new Error("thrown")) : undefined
    )
    assert.deepStrictEqual(await failedChecks({ ...correct, invoke: throws }), ["failing"])
  })
})
