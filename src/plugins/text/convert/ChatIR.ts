/**
 * The internal representation (IR) every text-protocol conversion goes through.
 *
 * Conventions the converters rely on:
 * - `Usage.inputTokens` follows Anthropic: it EXCLUDES cache reads and cache writes
 *   (OpenAI's `prompt_tokens` = input + cacheRead + cacheWrite). `outputTokens` includes reasoning tokens;
 *   `reasoningTokens` is the subset spent on reasoning.
 * - Tool-call ids are kept as the upstream/client issued them; only the Anthropic encoders sanitize them
 *   (see `toolId.ts`), and the Anthropic decoders restore them, so the IR never holds a sanitized id.
 * - Tool results live in their own `tool` message, always placed right after the assistant turn that called them.
 * - A thinking part records which vendor issued its signature (Anthropic, Gemini) or that the gateway made it up, and
 *   a tool call may carry the Gemini `thoughtSignature` it came with: each request encoder sends on only its own
 *   vendor's signatures (see `thinkingSignature.ts` for how clients carry them in between).
 * - Enums are open: unknown stop reasons, efforts, etc. are carried as strings.
 */
import type { Message, ToolDefinition, Usage } from "@tollgate/plugin-spec/chat"
import { Result, Schema } from "effect"
import { asString, compact, isRecord } from "./json.ts"

// The IR's types are the plugin spec's (a chat plugin receives them): one definition, versioned with the spec.
export type {
  AssistantPart,
  ChatRequest,
  ChatResponse,
  ImagePart,
  ImageSource,
  Message,
  ReasoningConfig,
  RedactedThinkingPart,
  ResponseFormat,
  SignatureOrigin,
  StopReason,
  TextPart,
  ThinkingMode,
  ThinkingPart,
  ToolCallPart,
  ToolChoice,
  ToolDefinition,
  ToolResultPart,
  Usage,
  UserPart,
  WebSearch
} from "@tollgate/plugin-spec/chat"

export const emptyUsage: Usage = {
  inputTokens: 0,
  outputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0
}

/** Input that cannot be expressed in the target dialect, or is malformed. `param` is a dotted path into the input. */
export class ConvertError extends Schema.TaggedError<ConvertError>()("ConvertError", {
  param: Schema.String,
  message: Schema.String
}) {}

export type Converted<A> = Result.Result<A, ConvertError>

export const convertError = (param: string, message: string): Converted<never> =>
  Result.fail(new ConvertError({ param, message }))

/**
 * An optional flag of the client's request: absent (or null) is undefined, anything but a boolean is refused, as the
 * vendor would refuse it — read leniently, `"yes"` would silently mean false.
 */
export const optionalFlag = (value: unknown, param: string): Converted<boolean | undefined> =>
  value === undefined || value === null
    ? Result.succeed(undefined)
    : typeof value === "boolean"
      ? Result.succeed(value)
      : convertError(param, "expected a boolean (true or false)")

/**
 * Every tool result must answer a tool call made in an earlier assistant turn; upstreams reject orphans with a
 * 400 that would otherwise surface as a confusing vendor message.
 */
export const checkToolPairing = (
  messages: ReadonlyArray<Message>,
  pathOf: (index: number) => string
): Converted<void> => {
  const called = new Set<string>()
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]
    if (message.role === "assistant") {
      for (const part of message.content) if (part.type === "tool_call") called.add(part.id)
    } else if (message.role === "tool") {
      for (const part of message.content) {
        if (!called.has(part.toolCallId)) {
          return convertError(pathOf(i), `tool result for '${part.toolCallId}' has no preceding tool call`)
        }
      }
    }
  }
  return Result.succeed(undefined)
}

/**
 * A function tool's definition as every dialect spells its fields (OpenAI's `function`, Anthropic's tool, a Responses
 * function tool): the name required, `strict` a boolean when given, parameters an object schema (an empty one when
 * absent). `at` is the tool's path.
 */
export const toolDefinition = (
  fields: {
    readonly name?: unknown
    readonly description?: unknown
    readonly parameters?: unknown
    readonly strict?: unknown
  },
  at: string
): Converted<ToolDefinition> => {
  const name = asString(fields.name)
  if (name === undefined) return convertError(`${at}.name`, "name must be a string")
  const strict = optionalFlag(fields.strict, `${at}.strict`)
  if (Result.isFailure(strict)) return Result.fail(strict.failure)
  return Result.succeed(
    compact({
      name,
      description: asString(fields.description),
      parameters: isRecord(fields.parameters) ? fields.parameters : { type: "object", properties: {} },
      strict: strict.success
    })
  )
}
