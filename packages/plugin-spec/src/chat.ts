/**
 * Chat plugins, v1: text and chat-style image models served on `/v1/chat/completions`, `/v1/messages` and Gemini's
 * `generateContent`. A chat plugin receives the request in the chat IR and answers in any of the three wire dialects
 * (a whole body, or SSE events); the gateway converts to the client's dialect, passes a matching one through
 * untouched, holds `estimate` before the call and settles `price(usage)` after it.
 */
import type { Effect } from "effect"
import type { ChatRequest, Usage } from "./chatIR.ts"
import type { Dialect, PluginFailure, PluginIdentity, PluginModel, PricingRule, SseFrame, TokenCounter, UpstreamHttp } from "./common.ts"

export type * from "./common.ts"

export type * from "./chatIR.ts"

export interface ChatCall {
  readonly model: PluginModel
  /** The request in the chat IR, already validated. */
  readonly request: ChatRequest
  /** The client's own body and dialect, for plugins that can pass a matching dialect through untouched. */
  readonly client: { readonly dialect: Dialect; readonly body: Readonly<Record<string, unknown>> }
  readonly requestId: string
  /** Aborted when the client goes away or the gateway gives up: stop the upstream call. */
  readonly signal: AbortSignal
  /** The gateway's HTTP client for `model.upstreams` (it adds their credentials); set for every plugin loaded from the
   * operator config. */
  readonly http?: UpstreamHttp | undefined
  /** The gateway's tokenizer; set for every plugin loaded from the operator config. */
  readonly tokens?: TokenCounter | undefined
}

export type ChatReply =
  /** A whole response body in `dialect`, with its usage. */
  | { readonly _tag: "Body"; readonly dialect: Dialect; readonly body: unknown }
  /**
   * SSE events in `dialect`, ending the way the dialect ends (a usage chunk then `[DONE]` for OpenAI, `message_stop`
   * for Anthropic). Returning this means the first byte may reach the client: no fallback after it.
   */
  | { readonly _tag: "Events"; readonly dialect: Dialect; readonly events: AsyncIterable<SseFrame> }

export interface ChatPricingInput {
  readonly request: ChatRequest
  /** The gateway's tokenizer count of the prompt (or the plugin's own `countInput`). */
  readonly inputTokens: number
}

export interface ChatPlugin extends PluginIdentity<"chat"> {
  readonly pricing: PricingRule<ChatPricingInput, Usage>
  readonly invoke: (call: ChatCall) => Effect.Effect<ChatReply, PluginFailure>
  /**
   * Optional and pure: why this model cannot take the request at all (tools sent to an image model), checked before
   * anything is held. Undefined = it can.
   */
  readonly check?:
    | ((client: ChatCall["client"], request: ChatRequest, model: PluginModel) => PluginFailure | undefined)
    | undefined
  /**
   * Optional and pure: what this model will leave out of the request (hosted tools its upstream does not run), one
   * note each, sent to the client in the `x-tollgate-warning` header. Checked after `check`, before anything is held.
   */
  readonly notes?:
    | ((client: ChatCall["client"], request: ChatRequest, model: PluginModel) => ReadonlyArray<string>)
    | undefined
  /**
   * Optional: input tokens for the hold, counted from the client's body; without it the gateway runs its tokenizer. A
   * family whose price does not depend on input answers 0 instead of tokenizing megabytes of base64.
   */
  readonly countInput?: ((client: ChatCall["client"]) => number) | undefined
}
