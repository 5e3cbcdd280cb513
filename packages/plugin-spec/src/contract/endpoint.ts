/** The contract suite of a plugin of a new kind: its request schema, pricing, calls, abort and failures. */
import { Effect } from "effect"
import type fc from "fast-check"
import { assert, describe, it } from "vitest"
import type { FailureReason, PluginModel, TokenCounter, UpstreamHttp } from "../common.ts"
import type { EndpointPlugin, EndpointRequest, EndpointUsage } from "../endpoint.ts"
import { type ContractCheck, contractChecks } from "./engine.ts"
import { fetchUpstreamHttp } from "./fetchUpstreamHttp.ts"

export interface EndpointFixtures<Request extends EndpointRequest, Usage extends EndpointUsage> {
  readonly models: ReadonlyArray<PluginModel>
  /** Bodies a client may send: each must pass the schema and be answered. */
  readonly requests: ReadonlyArray<{ readonly name: string; readonly body: unknown }>
  /** Bodies the schema must refuse. */
  readonly invalidBodies?: ReadonlyArray<unknown>
  /** Requests to price (any valid one). */
  readonly inputs: fc.Arbitrary<Request>
  /** Usages the hold for `request` covers. */
  readonly usageWithin: (request: Request, model: PluginModel) => fc.Arbitrary<Usage>
  /** Requests whose call must fail (a model whose upstream refuses it), with the model to call and the reason. */
  readonly failing?: ReadonlyArray<{
    readonly name: string
    readonly model: PluginModel
    readonly body: unknown
    readonly reason: FailureReason
  }>
  /** The HTTP capability the gateway would give; defaults to `fetchUpstreamHttp()`. */
  readonly http?: UpstreamHttp
  /** How long one call may take (default 10 s). */
  readonly timeoutMs?: number
  /** The token counter pricing and calls are given, as the gateway gives its own (`o200k_base`). */
  readonly tokens?: TokenCounter
}

const decode = async <Request>(plugin: EndpointPlugin<EndpointRequest, EndpointUsage>, body: unknown) => {
  const result = await plugin.request["~standard"].validate(body)
  return result as { readonly value?: Request; readonly issues?: ReadonlyArray<unknown> }
}

/** The checks of a new kind's suite, as plain functions (see `contractChecks`). */
export const endpointContractChecks = <Request extends EndpointRequest, Usage extends EndpointUsage>(
  plugin: EndpointPlugin<Request, Usage>,
  fixtures: EndpointFixtures<Request, Usage>
): ReadonlyArray<ContractCheck> => {
  const http = fixtures.http ?? fetchUpstreamHttp()
  const generic = plugin as unknown as EndpointPlugin<EndpointRequest, EndpointUsage>
  const call = (model: PluginModel, body: unknown) => (signal: AbortSignal) =>
    Effect.flatMap(
      Effect.promise(() => decode<Request>(generic, body)),
      (decoded) => {
        if (decoded.value === undefined) return Effect.die(`the fixture body does not pass the schema: ${JSON.stringify(body)}`)
        const request = decoded.value
        return Effect.flatMap(plugin.invoke({
          model,
          request,
          requestId: "contract",
          signal,
          http,
          ...(fixtures.tokens === undefined ? {} : { tokens: fixtures.tokens })
        }), (reply) =>
          reply !== null && typeof reply === "object" && reply.body !== undefined && reply.usage !== null && typeof reply.usage === "object"
            ? Effect.succeed(reply.usage)
            : Effect.die(`the reply is not { body, usage }: ${JSON.stringify(reply)}`)
        )
      }
    )

  const [model] = fixtures.models
  return [
    {
      name: "declares an endpoint under /v1 and a request schema",
      run: async () => {
        assert.strictEqual(plugin.endpoint.method, "POST")
        assert.match(plugin.endpoint.path, /^\/v1\/[a-z0-9/_-]+$/)
        assert.isFunction(plugin.request["~standard"].validate)
      }
    },
    {
      name: "accepts every fixture body and refuses the invalid ones",
      run: async () => {
        for (const { name: bodyName, body } of fixtures.requests) {
          assert.isUndefined((await decode(generic, body)).issues, `${bodyName} was refused by the schema`)
        }
        for (const body of fixtures.invalidBodies ?? []) {
          assert.isNotEmpty((await decode(generic, body)).issues ?? [], `accepted ${JSON.stringify(body)}`)
        }
      }
    },
    ...contractChecks(plugin.kind, plugin, {
      ...(fixtures.timeoutMs === undefined ? {} : { timeoutMs: fixtures.timeoutMs }),
      ...(fixtures.tokens === undefined ? {} : { tokens: fixtures.tokens }),
      models: fixtures.models,
      inputs: fixtures.inputs,
      usageWithin: fixtures.usageWithin,
      calls:
        model === undefined
          ? []
          : fixtures.requests.map(({ name: callName, body }) => ({
              name: callName,
              model,
              input: body as Request,
              run: call(model, body)
            })),
      failing: (fixtures.failing ?? []).map((failing) => ({
        name: failing.name,
        reason: failing.reason,
        run: call(failing.model, failing.body)
      }))
    })
  ]
}

export const describeEndpointPluginContract = <Request extends EndpointRequest, Usage extends EndpointUsage>(
  name: string,
  plugin: EndpointPlugin<Request, Usage>,
  fixtures: EndpointFixtures<Request, Usage>
) =>
  describe(`plugin contract (new kind ${plugin.kind}): ${name}`, () => {
    const limit = (fixtures.timeoutMs ?? 10_000) + 5_000
    for (const check of endpointContractChecks(plugin, fixtures)) it(check.name, check.run, limit)
  })
