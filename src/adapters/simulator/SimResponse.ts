import type { Dialect } from "@tollgate/plugin-spec"
/**
 * What a dialect handler answers, before the server applies fault knobs and writes it to the socket.
 * Handlers are pure: they never touch the socket, timers or the clock.
 */

export type { Dialect }

export interface SimRequest {
  readonly method: string
  /** Path without the query string. */
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  /** The parsed JSON body; `undefined` when there was none. */
  readonly body: unknown
  /** True when a body was sent but is not valid JSON. */
  readonly bodyInvalid: boolean
}

/** Per-instance facts a handler needs; ids come from a counter so they are unique yet reproducible. */
export interface SimContext {
  readonly apiKey: string
  readonly thinkingSecret: string
  readonly createdSeconds: number
  readonly replyTokens: number
  /** When set, only these model names exist; others get the vendor's "model not found". */
  readonly models: ReadonlyArray<string> | undefined
  /**
   * How OpenAI-style tool-call ids look: `call_<hex>` like OpenAI, or `functions.<name>:<n>` like Kimi and other
   * OpenAI-compatible vendors, an id Anthropic's pattern rejects. Default `openai`.
   */
  readonly toolCallIds?: "openai" | "kimi" | undefined
  readonly nextId: () => string
}

export interface JsonReply {
  readonly _tag: "Json"
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: unknown
}

export interface SseReply {
  readonly _tag: "Sse"
  readonly headers: Readonly<Record<string, string>>
  /** Events up to and including the last content delta, each a complete frame ending in a blank line. */
  readonly head: ReadonlyArray<string>
  /** Closing events (finish, usage, terminator). A cut stream never sends them. */
  readonly tail: ReadonlyArray<string>
  /** The n-th extra content event of a never-ending stream. */
  readonly filler: (n: number) => string
  /** The vendor's in-band error frame. */
  readonly error: string
  /** A frame whose data is not valid JSON. */
  readonly malformed: string
}

export type SimReply = JsonReply | SseReply

export const json = (status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): JsonReply => ({
  _tag: "Json",
  status,
  headers,
  body
})

/** A `data:`-only SSE frame (OpenAI, Gemini). */
export const dataFrame = (data: unknown): string =>
  `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`

/** An SSE frame with an `event:` line (Anthropic). */
export const eventFrame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`

export const header = (request: SimRequest, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === "string" ? value : value?.[0]
}
