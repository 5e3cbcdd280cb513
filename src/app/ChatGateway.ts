/**
 * The chat pipeline, in named steps: plan (the model and plugin for the key, the request in the IR, the plugin's
 * refusal, the prompt's tokens, the estimate; ChatPlan.ts), call under a hold of the estimate (HeldCall.ts), then
 * deliver the reply — whole (ChatJsonReply.ts) or streamed (ChatStreamReply.ts) — and settle it from real usage, or
 * release the whole hold when nothing was delivered.
 */
import { Clock, Context, Effect, Layer, type Stream } from "effect"
import type { Dialect } from "../plugins/ModelPlugin.ts"
import type { ChatRequest } from "../plugins/text/convert/ChatIR.ts"
import type { InvalidChatRequest, ModelNotAllowed, ModelNotFound, UpstreamFailed } from "./ChatErrors.ts"
import { deliverJson } from "./ChatJsonReply.ts"
import { planChat } from "./ChatPlan.ts"
import { deliverStream } from "./ChatStreamReply.ts"
import type { ResponseNotStored, TurnToStore } from "./DeliveredTurn.ts"
import { callUnderHold, heldCallServices, holdInputFor } from "./HeldCall.ts"
import type { AuthenticatedKey } from "./Keys.ts"
import type { LedgerRejected } from "./LedgerErrors.ts"
import { ChatDialects } from "./ports/ChatDialects.ts"
import { ResponseStore } from "./ports/ResponseStore.ts"
import { TokenCounter } from "./ports/TokenCounter.ts"
import type { StoreRefused, StoreUnavailable } from "./StoreErrors.ts"
import { traced } from "./Traced.ts"

export interface ChatInput {
  readonly dialect: Dialect
  readonly body: Readonly<Record<string, unknown>>
  /** Gemini carries the model and streaming in the URL, not the body. */
  readonly pathModel?: string
  readonly pathStream?: boolean
  readonly key: AuthenticatedKey
  readonly requestId: string
  /** The id the client is to see for its response (the Responses API's, under which the gateway stores it). */
  readonly responseId?: string
  /** The body already decoded to the IR by the caller (the Responses API, which builds the turn's history itself). */
  readonly request?: ChatRequest
  /**
   * The Responses API's turn to store: committed with the reply's bill before its final event leaves, or the reply is
   * not delivered as stored and nothing is billed (DeliveredTurn.ts).
   */
  readonly stored?: TurnToStore
}

export type ChatResult =
  | { readonly _tag: "Json"; readonly body: unknown }
  | { readonly _tag: "Stream"; readonly frames: Stream.Stream<Uint8Array> }

export type ChatError =
  | ModelNotFound
  | ModelNotAllowed
  | InvalidChatRequest
  | UpstreamFailed
  | LedgerRejected
  | StoreUnavailable
  | StoreRefused
  | ResponseNotStored

export class ChatGateway extends Context.Service<
  ChatGateway,
  { readonly chat: (input: ChatInput) => Effect.Effect<ChatResult, ChatError> }
>()("tollgate/app/ChatGateway") {
  static readonly layer = Layer.effect(
    ChatGateway,
    Effect.gen(function* () {
      const held = yield* heldCallServices
      const { registry, ledger, deployments } = held
      const dialects = yield* ChatDialects
      const tokens = yield* TokenCounter
      const store = yield* ResponseStore

      const chat = Effect.fnUntraced(function* (input: ChatInput) {
        const plan = yield* planChat(registry, dialects, input)
        const abort = new AbortController()
        const { hold, reply } = yield* callUnderHold(
          ledger,
          holdInputFor(
            { key: input.key, model: plan.modelId, requestId: input.requestId },
            plan.plugin.id,
            plan.amount
          ),
          (signal) =>
            deployments.route(plan.model, plan.hint, (deployment) =>
              plan.plugin.invoke({
                model: deployment,
                request: plan.request,
                client: plan.clientCall,
                requestId: input.requestId,
                signal
              })
            ),
          abort,
          plan.request.stream
        )
        const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
        return reply._tag === "Body"
          ? yield* deliverJson({ dialects, store }, plan, input, hold, reply, created)
          : yield* deliverStream({ ledger, store, tokens }, plan, input, hold, reply, abort, created)
      }, traced("ChatGateway.chat"))

      return ChatGateway.of({ chat })
    })
  )
}
