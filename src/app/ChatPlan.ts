/**
 * The first step of the chat pipeline, before anything is held: which model and plugin, the request in the IR, the
 * plugin's own refusal, the prompt's tokens, and from them the most the call can cost and how it is routed.
 */
import { Effect, Result } from "effect"
import type { ChatRequest } from "../plugins/text/convert/ChatIR.ts"
import type { ChatPlugin, PluginModel } from "../plugins/ModelPlugin.ts"
import type { Micros } from "../domain/Money.ts"
import { InvalidChatRequest, upstreamFailed } from "./ChatErrors.ts"
import type { ChatInput } from "./ChatGateway.ts"
import { resolveModel } from "./HeldCall.ts"
import { CurrentTelemetry } from "./RequestTelemetry.ts"
import type { PluginRegistry } from "./PluginRegistry.ts"
import type { ChatDialect, ChatDialects } from "./ports/ChatDialects.ts"
import { chatRouteHint } from "./routing/Affinity.ts"
import type { RouteHint } from "./routing/Deployments.ts"

export interface ChatPlan {
  /** The model id the client named. */
  readonly modelId: string
  readonly plugin: ChatPlugin
  readonly model: PluginModel
  /** The client's protocol, which reads its request and writes its answer. */
  readonly client: ChatDialect
  readonly request: ChatRequest
  /** The client's call as it came, for a plugin that passes a same-protocol body through. */
  readonly clientCall: { readonly dialect: ChatInput["dialect"]; readonly body: ChatInput["body"] }
  readonly inputTokens: number
  /** Held before the call. */
  readonly amount: Micros
  readonly hint: RouteHint
}

const modelOf = (input: ChatInput) =>
  input.pathModel ?? (typeof input.body.model === "string" ? input.body.model : undefined)

export const planChat = (registry: PluginRegistry["Service"], dialects: ChatDialects["Service"], input: ChatInput) =>
  Effect.gen(function* () {
    const modelId = modelOf(input)
    if (modelId === undefined) return yield* new InvalidChatRequest({ param: "model", message: "model is required" })
    const client = dialects[input.dialect]
    // A model served on another endpoint is refused before any hold: it costs nothing and says where to go.
    const { plugin, model } = yield* resolveModel(
      registry,
      "chat",
      modelId,
      input.key,
      client.called(modelId, input.pathStream === true)
    )
    const request = yield* decoded(client, input, modelId)
    const clientCall = { dialect: input.dialect, body: input.body }
    const refusal = plugin.check?.(clientCall, request, model)
    if (refusal !== undefined) return yield* upstreamFailed(refusal)
    // What the model leaves out of the request (a hosted tool it cannot run) reaches the client as a warning.
    const notes = plugin.notes?.(clientCall, request, model) ?? []
    if (notes.length > 0) (yield* CurrentTelemetry).warnings.push(...notes)
    // A flat-priced plugin says how to count (or not count) its input: tokenizing a multi-MB image is wasted work.
    // Otherwise a big prompt is counted in slices, so the event loop answers other requests meanwhile.
    const inputTokens = plugin.countInput?.(clientCall) ?? (yield* client.countInput(input.body))
    return {
      modelId,
      plugin,
      model,
      client,
      request,
      clientCall,
      inputTokens,
      amount: plugin.pricing.estimate({ request, inputTokens }, model),
      hint: chatRouteHint(input.key.keyId, request, clientCall, inputTokens, model)
    } satisfies ChatPlan
  })

/** The request in the IR: decoded from the client's body, or as the caller built it (the Responses API). */
const decoded = (client: ChatDialect, input: ChatInput, modelId: string) => {
  if (input.request !== undefined) return Effect.succeed(input.request)
  const result = client.decode(input.body, { model: modelId, stream: input.pathStream ?? false })
  return Result.isSuccess(result)
    ? Effect.succeed(result.success)
    : Effect.fail(
        new InvalidChatRequest({
          param: result.failure.param === "" ? null : result.failure.param,
          message: result.failure.message
        })
      )
}
