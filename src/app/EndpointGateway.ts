/**
 * The pipeline of plugins of new kinds (`POST /v1/rerank`, …): everything a built-in endpoint gets — the model resolved
 * for the kind and the key's list, the hold, the call under it, the settlement from the plugin's usage — driven by
 * what the plugin declares (its request schema, estimate, price and call) instead of code per kind.
 */
import type {
  EndpointPlugin,
  EndpointReply,
  EndpointUsage,
  PluginModel,
  StandardIssue,
  StandardResult
} from "@tollgate/plugin-spec"
import { Context, Effect, Layer } from "effect"
import { InvalidChatRequest } from "./ChatErrors.ts"
import { type HeldCallError, heldCallServices, runHeldCall } from "./HeldCall.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import { PluginHttp } from "./PluginHttp.ts"
import { wrongEndpointMessage } from "./PluginRegistry.ts"
import { traced } from "./Traced.ts"

export interface EndpointInput {
  /** The kind whose endpoint was called (`rerank`), and how, for messages (`POST /v1/rerank`). */
  readonly kind: string
  readonly called: string
  /** The JSON body, parsed; the plugin's schema validates it. */
  readonly body: unknown
  readonly key: AuthenticatedKey
  readonly requestId: string
}

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** `documents.0.text`, from a Standard Schema issue's path. */
const pathOf = (issue: StandardIssue): string | null =>
  issue.path === undefined || issue.path.length === 0
    ? null
    : issue.path.map((segment) => String(typeof segment === "object" ? segment.key : segment)).join(".")

/** The body through the plugin's request schema: its first issue is the client's 400, naming the field. */
const validate = <A>(plugin: EndpointPlugin, body: unknown) =>
  Effect.gen(function* () {
    const outcome = plugin.request["~standard"].validate(body)
    // Standard Schema lets a validator be asynchronous; most are not, and pay nothing for it.
    const result: StandardResult<unknown> = outcome instanceof Promise ? yield* Effect.promise(() => outcome) : outcome
    if (result.issues !== undefined) {
      const first = result.issues[0]
      return yield* new InvalidChatRequest({
        param: first === undefined ? null : pathOf(first),
        message: first?.message ?? "the request does not match the endpoint's schema"
      })
    }
    return result.value as A
  })

export class EndpointGateway extends Context.Service<
  EndpointGateway,
  { readonly call: (input: EndpointInput) => Effect.Effect<unknown, HeldCallError> }
>()("tollgate/app/EndpointGateway") {
  static readonly layer = Layer.effect(
    EndpointGateway,
    Effect.gen(function* () {
      const services = yield* heldCallServices
      const http = yield* PluginHttp

      const call = Effect.fnUntraced(function* (input: EndpointInput) {
        if (!isRecord(input.body)) {
          return yield* new InvalidChatRequest({ param: null, message: "the request body must be a JSON object" })
        }
        // A kind whose plugin declares a default model takes a body without one (the key's list still applies).
        const fallback = services.registry.endpoints.find((endpoint) => endpoint.kind === input.kind)?.defaultModel
        const body =
          input.body.model === undefined && fallback !== undefined ? { ...input.body, model: fallback } : input.body
        if (typeof body.model !== "string" || body.model === "") {
          return yield* new InvalidChatRequest({ param: "model", message: "is required" })
        }
        const held = { key: input.key, model: body.model, requestId: input.requestId }
        return yield* runHeldCall(services, held, { kind: "endpoint", called: input.called }, (entry) =>
          Effect.gen(function* () {
            if (entry.plugin.kind !== input.kind) {
              return yield* new InvalidChatRequest({
                param: "model",
                message: wrongEndpointMessage(held.model, entry, input.called)
              })
            }
            const { plugin, model } = entry
            const request = yield* validate<{ readonly model: string }>(plugin, body)
            return {
              amount: plugin.pricing.estimate(request, model),
              call: (signal: AbortSignal, deployment: PluginModel) =>
                plugin.invoke({ model: deployment, request, requestId: input.requestId, signal, http }),
              bill: (reply: EndpointReply<EndpointUsage>) =>
                Effect.succeed({ cost: plugin.pricing.price(reply.usage, model), usage: { ...reply.usage } })
            }
          })
        ).pipe(Effect.map((reply) => reply.body))
      }, traced("EndpointGateway.call"))

      return EndpointGateway.of({ call })
    })
  )
}
