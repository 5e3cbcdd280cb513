/**
 * The chat wire protocols as the chat pipeline uses them, without knowing their encodings: the edge
 * (`src/http/dialects`) owns each protocol's decoding, encoding, input counting, stream framing and error envelope,
 * and hands the pipeline this table. The pipeline picks the client's entry to read the request and write the answer,
 * and the plugin reply's entry to read its usage.
 */
import type { ChatRequest, ChatResponse, Dialect } from "@tollgate/plugin-spec"
import { Context, type Effect, type Result } from "effect"

/** Input that cannot be expressed or is malformed; `param` is a dotted path into the body. */
export interface DialectProblem {
  readonly param: string
  readonly message: string
}

export interface ChatDialect {
  readonly dialect: Dialect
  /** The endpoint a client of this protocol called, as wrong-endpoint errors name it. */
  readonly called: (model: string, stream: boolean) => string
  /**
   * Optional: what the endpoint refuses in a body before reading it (the Responses API's field checks), as it refuses
   * it; a batch line for the endpoint is checked with it too. `message` starts with `param`.
   */
  readonly check?: (body: Readonly<Record<string, unknown>>) => DialectProblem | undefined
  /** The client's body in the chat IR; Gemini carries the model and streaming in the URL. */
  readonly decode: (
    body: Readonly<Record<string, unknown>>,
    url: { readonly model: string; readonly stream: boolean }
  ) => Result.Result<ChatRequest, DialectProblem>
  /** Input tokens of the client's body, as the tokenizer counts them (big bodies in slices). */
  readonly countInput: (body: Readonly<Record<string, unknown>>) => Effect.Effect<number>
  /** A whole reply body of this protocol in the chat IR (for its usage, or to re-encode it). */
  readonly readReply: (
    body: unknown,
    fallback: { readonly id: string; readonly model: string }
  ) => Result.Result<ChatResponse, DialectProblem>
  /**
   * A whole answer in this protocol. `client` is the request it answers and the id the client is to see (the Responses
   * API repeats the request's settings in its Response object, under the gateway's id).
   */
  readonly encodeReply: (
    response: ChatResponse,
    created: number,
    client: { readonly body: Readonly<Record<string, unknown>>; readonly responseId?: string | undefined }
  ) => unknown
  /**
   * Optional: a reply in this protocol (a whole body, or one parsed stream event), whether the upstream's own or the
   * gateway's encoding, as this protocol's client is to see it, with the whole response to keep once it is complete
   * (the Responses API: the gateway's id, the client's settings, encrypted reasoning only when asked for).
   * Undefined = shown as it is. Without it, an upstream's own reply passes with only its model name swapped.
   */
  readonly present?: (value: Readonly<Record<string, unknown>>, context: ReplyContext) => Presented | undefined
}

/** The request a reply answers, as `present` needs it. */
export interface ReplyContext {
  readonly body: Readonly<Record<string, unknown>>
  readonly responseId?: string | undefined
  readonly model: string
  /** Unix seconds. */
  readonly created: number
}

/** A reply body or stream event as the client is to see it, and the whole response when this one completes it. */
export interface Presented {
  readonly shown: unknown
  readonly final?: Readonly<Record<string, unknown>>
}

export class ChatDialects extends Context.Service<ChatDialects, Readonly<Record<Dialect, ChatDialect>>>()(
  "tollgate/app/ports/ChatDialects"
) {}
