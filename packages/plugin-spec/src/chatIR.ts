/**
 * The chat intermediate representation (IR): the validated request a chat plugin receives, whatever protocol the
 * client called, and the usage it reports. Conventions:
 * - `Usage.inputTokens` follows Anthropic: it EXCLUDES cache reads and cache writes (OpenAI's `prompt_tokens` = input +
 *   cacheRead + cacheWrite). `outputTokens` includes reasoning tokens; `reasoningTokens` is the subset spent on them.
 * - Tool results live in their own `tool` message, right after the assistant turn that called them.
 * - A thinking part records which vendor issued its signature (Anthropic, Gemini) or that the gateway made it up.
 * - Enums are open: unknown stop reasons, efforts, etc. are carried as strings.
 */
export interface TextPart {
  readonly type: "text"
  readonly text: string
}

export type ImageSource =
  | { readonly kind: "url"; readonly url: string }
  | { readonly kind: "base64"; readonly mediaType: string; readonly data: string }

export interface ImagePart {
  readonly type: "image"
  readonly source: ImageSource
}

export interface ToolCallPart {
  readonly type: "tool_call"
  readonly id: string
  readonly name: string
  /** The parsed arguments object (OpenAI's `arguments` JSON text, Anthropic's `input`, Gemini's `args`). */
  readonly input: Readonly<Record<string, unknown>>
  /** The Gemini `thoughtSignature` on this function call; only ever sent back to Gemini. */
  readonly signature?: string
}

export interface ToolResultPart {
  readonly type: "tool_result"
  readonly toolCallId: string
  readonly content: ReadonlyArray<TextPart | ImagePart>
  readonly isError: boolean
}

/** Who issued a thinking signature: `openai` is a Responses API reasoning item's `encrypted_content`. */
export type SignatureOrigin = "anthropic" | "gemini" | "openai" | "synthetic"

export interface ThinkingPart {
  readonly type: "thinking"
  readonly text: string
  /** The issuing vendor's own signature (unwrapped), or the gateway's `gw1.` placeholder. */
  readonly signature?: string
  readonly signatureOrigin?: SignatureOrigin
}

export interface RedactedThinkingPart {
  readonly type: "redacted_thinking"
  readonly data: string
}

export type UserPart = TextPart | ImagePart
export type AssistantPart = TextPart | ThinkingPart | RedactedThinkingPart | ToolCallPart

export type Message =
  | { readonly role: "user"; readonly content: ReadonlyArray<UserPart> }
  | { readonly role: "assistant"; readonly content: ReadonlyArray<AssistantPart> }
  | { readonly role: "tool"; readonly content: ReadonlyArray<ToolResultPart> }

export interface ToolDefinition {
  readonly name: string
  readonly description?: string
  /** JSON schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>
  readonly strict?: boolean
}

export type ToolChoice =
  | { readonly type: "auto" }
  | { readonly type: "any" }
  | { readonly type: "none" }
  | { readonly type: "tool"; readonly name: string }

export type ResponseFormat =
  | { readonly type: "text" }
  | { readonly type: "json_object" }
  | {
      readonly type: "json_schema"
      readonly name?: string
      readonly description?: string
      readonly schema: Readonly<Record<string, unknown>>
      readonly strict?: boolean
    }

export type ThinkingMode =
  | { readonly type: "enabled"; readonly budgetTokens: number }
  | { readonly type: "adaptive" }
  | { readonly type: "disabled" }

export interface ReasoningConfig {
  /** OpenAI `reasoning_effort` / Anthropic `output_config.effort`; open enum. */
  readonly effort?: string
  /** Anthropic `thinking`, when the client said it explicitly. */
  readonly thinking?: ThinkingMode
}

export interface ChatRequest {
  readonly model: string
  readonly system: ReadonlyArray<TextPart>
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<ToolDefinition>
  readonly toolChoice?: ToolChoice
  readonly parallelToolCalls?: boolean
  readonly maxTokens?: number
  readonly stop?: ReadonlyArray<string>
  readonly temperature?: number
  readonly topP?: number
  readonly topK?: number
  readonly responseFormat?: ResponseFormat
  readonly reasoning?: ReasoningConfig
  readonly stream: boolean
  /** OpenAI `stream_options.include_usage` as the client asked it. */
  readonly includeUsage?: boolean
  /** OpenAI `user`/`safety_identifier`, Anthropic `metadata.user_id`. */
  readonly user?: string
  /** OpenAI's `prompt_cache_key` (chat completions and Responses): routes requests sharing a prefix to one cache. */
  readonly promptCacheKey?: string
  /** Gemini's `cachedContent`: the name of a cache created on Gemini; only Gemini can use it. */
  readonly cachedContent?: string
  /**
   * What the client asked for that the IR cannot carry (a Responses client's built-in tools, file inputs, prompt
   * templates): only an upstream of the client's own protocol, sent the client's body, can serve it. A plugin that
   * converts the request must refuse it with `invalid_request`, naming `param`.
   */
  readonly nativeOnly?: ReadonlyArray<{ readonly param: string; readonly message: string }>
  /**
   * Tools the client asked the vendor itself to run (a Responses client's `web_search`, `file_search`, `mcp`, …;
   * chat completions' `web_search_options`; Anthropic's server tools): `type` is the tool's type as the client wrote
   * it, `param` its field path. They are not in `tools`: only an upstream of the client's own protocol, sent the
   * client's body, runs them. Elsewhere a plugin leaves them out (and says so) or refuses them, as the operator set
   * the model's `hostedTools`.
   */
  readonly hostedTools?: ReadonlyArray<{ readonly param: string; readonly type: string }>
}

/** Open enum, Anthropic's vocabulary plus `content_filter`/`error` for what other vendors report. */
export type StopReason =
  | "end_turn"
  | "max_tokens"
  | "stop_sequence"
  | "tool_use"
  | "refusal"
  | "pause_turn"
  | "model_context_window_exceeded"
  | "error"
  | (string & {})

export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly cacheReadTokens: number
  readonly cacheWriteTokens: number
  /** Of `cacheWriteTokens`, those written to Anthropic's 1-hour cache (priced apart); absent = none. */
  readonly cacheWrite1hTokens?: number
  readonly reasoningTokens: number
  /** Web searches the vendor ran for the call (a Responses upstream's `web_search_call` items); absent = none. */
  readonly webSearches?: number
}

/** One web search the vendor ran for the answer (its hosted search tool): what it searched for and what it found. */
export interface WebSearch {
  readonly id: string
  readonly query: string
  readonly sources: ReadonlyArray<{ readonly url: string; readonly title?: string }>
}

export interface ChatResponse {
  readonly id: string
  readonly model: string
  readonly content: ReadonlyArray<AssistantPart>
  /** The vendor's hosted web searches for this answer, in order (shown to Responses clients as `web_search_call`s). */
  readonly webSearches?: ReadonlyArray<WebSearch>
  readonly stopReason: StopReason
  readonly stopSequence?: string
  readonly usage: Usage
}
