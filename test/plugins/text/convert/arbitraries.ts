/**
 * IR generators restricted to what each dialect can express, so that IR → dialect → IR must be the identity.
 */
import fc from "fast-check"
import type {
  AssistantPart,
  ChatRequest,
  ChatResponse,
  ImagePart,
  Message,
  TextPart,
  ThinkingPart,
  ToolCallPart,
  ToolDefinition,
  ToolResultPart,
  Usage
} from "../../../../src/plugins/text/convert/ChatIR.ts"

const nonEmpty = fc.string({ minLength: 1, maxLength: 12 })
const name = fc.stringMatching(/^[a-zA-Z0-9_-]{1,16}$/)
const jsonSafe = <A>(value: A): A => JSON.parse(JSON.stringify(value))
const input = fc
  .dictionary(
    fc.stringMatching(/^[a-z]{1,6}$/),
    fc.json({ maxDepth: 2 }).map((s) => JSON.parse(s) as unknown),
    {
      maxKeys: 3
    }
  )
  .map(jsonSafe)
const count = fc.nat({ max: 1_000_000 })

export const text: fc.Arbitrary<TextPart> = nonEmpty.map((t) => ({ type: "text", text: t }))

export const image = (mediaTypes: ReadonlyArray<string>): fc.Arbitrary<ImagePart> =>
  fc.oneof(
    fc.webUrl().map((url) => ({ type: "image" as const, source: { kind: "url" as const, url } })),
    fc
      .record({ mediaType: fc.constantFrom(...mediaTypes), data: fc.base64String({ minLength: 4, maxLength: 16 }) })
      .map(({ mediaType, data }) => ({ type: "image" as const, source: { kind: "base64" as const, mediaType, data } }))
  )

const toolCall = (ids: fc.Arbitrary<string>): fc.Arbitrary<ToolCallPart> =>
  fc.record({ id: ids, name, input }).map((c) => ({ type: "tool_call", ...c }))

const anthropicSignature = nonEmpty.filter((s) => !s.startsWith("gw1."))

const usage = (options: { cacheWrite: boolean; reasoningWithinOutput: boolean }): fc.Arbitrary<Usage> =>
  fc
    .record({
      inputTokens: count,
      outputTokens: count,
      cacheReadTokens: count,
      cacheWriteTokens: options.cacheWrite ? count : fc.constant(0),
      reasoningTokens: count
    })
    .map((u) =>
      options.reasoningWithinOutput ? { ...u, reasoningTokens: Math.min(u.reasoningTokens, u.outputTokens) } : u
    )

const tools: fc.Arbitrary<ReadonlyArray<ToolDefinition>> = fc.array(
  fc.record(
    {
      name,
      description: nonEmpty,
      parameters: fc.constant({ type: "object", properties: {} }),
      strict: fc.boolean()
    },
    { requiredKeys: ["name", "parameters"] }
  ),
  { maxLength: 2 }
)

/** Every encoder omits tool_choice (and parallel_tool_calls) when there are no tools: the vendors reject them. */
const withoutChoiceWhenNoTools = (request: ChatRequest): ChatRequest => {
  if (request.tools.length > 0) return request
  const { toolChoice: _, parallelToolCalls: __, ...rest } = request
  return rest
}

/** A conversation of turns; tool results only answer calls of the assistant turn right before them. */
const conversation = (turn: {
  user: fc.Arbitrary<Message>
  assistant: (calls: ReadonlyArray<ToolCallPart>) => fc.Arbitrary<Message>
  result: (id: string) => fc.Arbitrary<ToolResultPart>
  ids: fc.Arbitrary<string>
}): fc.Arbitrary<ReadonlyArray<Message>> =>
  fc
    .array(
      fc.oneof(
        turn.user.map((m) => [m]),
        fc.uniqueArray(toolCall(turn.ids), { selector: (c) => c.id, maxLength: 2 }).chain((calls) =>
          calls.length === 0
            ? turn.assistant(calls).map((m) => [m])
            : fc
                .tuple(
                  turn.assistant(calls),
                  fc
                    .tuple(...calls.map((c) => turn.result(c.id)))
                    .map((results): Message => ({ role: "tool", content: results })),
                  turn.user
                )
                .map(([a, r, u]) => [a, r, u])
        )
      ),
      { minLength: 1, maxLength: 4 }
    )
    .map((turns) => turns.flat())

// ---------------------------------------------------------------------------------------------------------------
// OpenAI subset

const openAIAssistant = (calls: ReadonlyArray<ToolCallPart>): fc.Arbitrary<Message> =>
  fc
    .record({
      thinking: fc.option(nonEmpty, { nil: undefined }),
      texts: fc.array(text, { maxLength: 2 })
    })
    .map(({ thinking, texts }) => ({
      role: "assistant" as const,
      content: [...(thinking === undefined ? [] : [{ type: "thinking" as const, text: thinking }]), ...texts, ...calls]
    }))

export const openAIRequest: fc.Arbitrary<ChatRequest> = fc
  .record(
    {
      model: nonEmpty,
      system: fc.array(text, { maxLength: 2 }),
      messages: conversation({
        user: fc
          .array(fc.oneof(text, image(["image/png", "image/jpeg", "image/heic"])), { minLength: 1, maxLength: 3 })
          .map((content) => ({ role: "user" as const, content })),
        assistant: openAIAssistant,
        result: (id) =>
          fc.array(text, { minLength: 1, maxLength: 2 }).map((content) => ({
            type: "tool_result" as const,
            toolCallId: id,
            content,
            isError: false
          })),
        ids: nonEmpty
      }),
      tools,
      toolChoice: fc.oneof(
        fc.constantFrom({ type: "auto" as const }, { type: "any" as const }, { type: "none" as const }),
        name.map((n) => ({ type: "tool" as const, name: n }))
      ),
      parallelToolCalls: fc.boolean(),
      maxTokens: fc.integer({ min: 1, max: 100_000 }),
      stop: fc.array(nonEmpty, { minLength: 1, maxLength: 4 }),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      topP: fc.double({ min: 0, max: 1, noNaN: true }),
      responseFormat: fc.oneof(
        fc.constantFrom({ type: "text" as const }, { type: "json_object" as const }),
        fc.record(
          {
            type: fc.constant("json_schema" as const),
            name,
            description: nonEmpty,
            schema: fc.constant({ type: "object" }),
            strict: fc.boolean()
          },
          { requiredKeys: ["type", "name", "schema"] }
        )
      ),
      reasoning: fc.constantFrom("low", "medium", "high", "max", "brand-new").map((effort) => ({ effort })),
      stream: fc.boolean(),
      includeUsage: fc.boolean(),
      user: nonEmpty
    },
    { requiredKeys: ["model", "system", "messages", "tools", "stream"] }
  )
  .map((request) => {
    if (request.stream || request.includeUsage === undefined) return request
    const { includeUsage: _, ...rest } = request
    return rest
  })
  .map(withoutChoiceWhenNoTools)

export const openAIResponse: fc.Arbitrary<ChatResponse> = fc
  .record({
    // OpenAI clients only ever see `chatcmpl-` ids, whatever the upstream's id was.
    id: nonEmpty.map((id) => `chatcmpl-${id}`),
    model: nonEmpty,
    thinking: fc.option(nonEmpty, { nil: undefined }),
    text: fc.option(nonEmpty, { nil: undefined }),
    calls: fc.array(toolCall(nonEmpty), { maxLength: 2 }),
    stop: fc.constantFrom("end_turn", "max_tokens", "refusal"),
    usage: usage({ cacheWrite: true, reasoningWithinOutput: false })
  })
  .map(({ id, model, thinking, text: t, calls, stop, usage }) => ({
    id,
    model,
    content: [
      ...(thinking === undefined ? [] : [{ type: "thinking" as const, text: thinking }]),
      ...(t === undefined ? [] : [{ type: "text" as const, text: t }]),
      ...calls
    ],
    stopReason: calls.length > 0 && stop !== "max_tokens" ? "tool_use" : stop,
    usage
  }))

// ---------------------------------------------------------------------------------------------------------------
// Anthropic subset

const anthropicIds = fc.oneof(nonEmpty, fc.constantFrom("functions.get_weather:0", "toolu_01XyZ", "call|1"))

const signedThinking: fc.Arbitrary<ThinkingPart> = fc
  .record({ text: fc.string({ maxLength: 12 }), signature: anthropicSignature })
  .map(({ text, signature }) => ({ type: "thinking", text, signature, signatureOrigin: "anthropic" }))

const anthropicAssistantPart: fc.Arbitrary<AssistantPart> = fc.oneof(
  text,
  signedThinking,
  nonEmpty.map((data) => ({ type: "redacted_thinking" as const, data }))
)

const anthropicImage = image(["image/png", "image/jpeg", "image/gif", "image/webp"])

export const anthropicRequest: fc.Arbitrary<ChatRequest> = fc
  .record(
    {
      model: nonEmpty,
      system: fc.array(text, { maxLength: 2 }),
      messages: conversation({
        user: fc
          .array(fc.oneof(text, anthropicImage), { minLength: 1, maxLength: 3 })
          .map((content) => ({ role: "user" as const, content })),
        assistant: (calls) =>
          fc
            .array(anthropicAssistantPart, { minLength: calls.length === 0 ? 1 : 0, maxLength: 3 })
            .map((parts) => ({ role: "assistant" as const, content: [...parts, ...calls] })),
        result: (id) =>
          fc
            .record({ content: fc.array(fc.oneof(text, anthropicImage), { maxLength: 2 }), isError: fc.boolean() })
            .map(({ content, isError }) => ({ type: "tool_result" as const, toolCallId: id, content, isError })),
        ids: anthropicIds
      }),
      tools,
      toolChoice: fc.oneof(
        fc.constantFrom({ type: "auto" as const }, { type: "any" as const }, { type: "none" as const }),
        name.map((n) => ({ type: "tool" as const, name: n }))
      ),
      parallelToolCalls: fc.boolean(),
      maxTokens: fc.integer({ min: 2048, max: 100_000 }),
      stop: fc.array(nonEmpty, { minLength: 1, maxLength: 6 }),
      temperature: fc.double({ min: 0, max: 1, noNaN: true }),
      topP: fc.double({ min: 0, max: 1, noNaN: true }),
      topK: fc.integer({ min: 1, max: 500 }),
      responseFormat: fc.constant({ type: "json_schema" as const, schema: { type: "object" } }),
      reasoning: fc.oneof(
        fc
          .integer({ min: 1024, max: 2047 })
          .map((budgetTokens) => ({ thinking: { type: "enabled" as const, budgetTokens } })),
        fc.constant({ thinking: { type: "disabled" as const } }),
        fc.constantFrom("low", "high", "max").map((effort) => ({ effort, thinking: { type: "adaptive" as const } }))
      ),
      stream: fc.boolean(),
      user: nonEmpty
    },
    { requiredKeys: ["model", "system", "messages", "tools", "stream", "maxTokens"] }
  )
  .map((request) => {
    // Anthropic cannot say "parallel" without a tool_choice, nor combine thinking with sampling or forced tools.
    let out: ChatRequest = withoutChoiceWhenNoTools(request)
    if (out.parallelToolCalls !== undefined && (out.toolChoice === undefined || out.toolChoice.type === "none")) {
      const { parallelToolCalls: _, ...rest } = out
      out = rest
    }
    const thinkingOn = out.reasoning?.thinking !== undefined && out.reasoning.thinking.type !== "disabled"
    const forced = out.toolChoice?.type === "any" || out.toolChoice?.type === "tool"
    const sampling = out.temperature !== undefined || out.topP !== undefined || out.topK !== undefined
    if (thinkingOn && (forced || sampling)) {
      const { reasoning: _, ...rest } = out
      out = rest
    }
    return out
  })

export const anthropicResponse: fc.Arbitrary<ChatResponse> = fc.record(
  {
    id: nonEmpty,
    model: nonEmpty,
    content: fc.array(
      fc.oneof(
        fc.string({ maxLength: 8 }).map((t) => ({ type: "text" as const, text: t })),
        signedThinking,
        fc
          .record({ text: fc.string({ maxLength: 8 }), hex: fc.stringMatching(/^[0-9a-f]{8}$/) })
          .map(({ text, hex }) => ({
            type: "thinking" as const,
            text,
            signature: `gw1.${hex}`,
            signatureOrigin: "synthetic" as const
          })),
        nonEmpty.map((data) => ({ type: "redacted_thinking" as const, data })),
        toolCall(anthropicIds)
      ),
      { maxLength: 4 }
    ),
    stopReason: fc.constantFrom(
      "end_turn",
      "max_tokens",
      "stop_sequence",
      "tool_use",
      "pause_turn",
      "refusal",
      "model_context_window_exceeded"
    ),
    stopSequence: nonEmpty,
    usage: usage({ cacheWrite: true, reasoningWithinOutput: false })
  },
  { requiredKeys: ["id", "model", "content", "stopReason", "usage"] }
)

// ---------------------------------------------------------------------------------------------------------------
// Gemini subset

export const geminiResponse: fc.Arbitrary<ChatResponse> = fc
  .record({
    id: nonEmpty,
    model: nonEmpty,
    content: fc.array(
      fc.oneof(
        fc.string({ maxLength: 8 }).map((t) => ({ type: "text" as const, text: t })),
        fc.string({ maxLength: 8 }).map((t) => ({ type: "thinking" as const, text: t })),
        toolCall(nonEmpty)
      ),
      { maxLength: 4 }
    ),
    stop: fc.constantFrom("end_turn", "max_tokens", "refusal"),
    usage: usage({ cacheWrite: false, reasoningWithinOutput: true })
  })
  .map(({ id, model, content, stop, usage }) => ({
    id,
    model,
    content,
    stopReason: content.some((p) => p.type === "tool_call") && stop !== "max_tokens" ? "tool_use" : stop,
    usage
  }))

export const geminiRequest: fc.Arbitrary<ChatRequest> = fc
  .record(
    {
      model: nonEmpty,
      system: fc.array(text, { maxLength: 2 }),
      messages: conversation({
        user: fc
          .array(
            fc.oneof(
              text,
              image(["image/png", "image/webp"]).filter((p) => p.source.kind === "base64"),
              fc.stringMatching(/^[a-z0-9]{1,10}$/).map((id) => ({
                type: "image" as const,
                source: { kind: "url" as const, url: `https://generativelanguage.googleapis.com/v1beta/files/${id}` }
              }))
            ),
            { minLength: 1, maxLength: 3 }
          )
          .map((content) => ({ role: "user" as const, content })),
        assistant: (calls) =>
          fc
            .array(text, { minLength: calls.length === 0 ? 1 : 0, maxLength: 2 })
            .map((texts) => ({ role: "assistant" as const, content: [...texts, ...calls] })),
        result: (id) =>
          fc.record({ text: fc.string({ maxLength: 8 }), isError: fc.boolean() }).map(({ text: t, isError }) => ({
            type: "tool_result" as const,
            toolCallId: id,
            content: [{ type: "text" as const, text: t }],
            isError
          })),
        ids: nonEmpty
      }),
      tools: fc.array(
        fc.record(
          { name, description: nonEmpty, parameters: fc.constant({ type: "object" }) },
          { requiredKeys: ["name", "parameters"] }
        ),
        { maxLength: 2 }
      ),
      toolChoice: fc.oneof(
        fc.constantFrom({ type: "auto" as const }, { type: "any" as const }, { type: "none" as const }),
        name.map((n) => ({ type: "tool" as const, name: n }))
      ),
      maxTokens: fc.integer({ min: 1, max: 100_000 }),
      stop: fc.array(nonEmpty, { minLength: 1, maxLength: 5 }),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      topP: fc.double({ min: 0, max: 1, noNaN: true }),
      topK: fc.integer({ min: 1, max: 100 }),
      responseFormat: fc.constantFrom(
        { type: "json_object" as const },
        { type: "json_schema" as const, schema: { type: "object" } }
      ),
      reasoning: fc.oneof(
        fc
          .integer({ min: 1, max: 32_000 })
          .map((budgetTokens) => ({ thinking: { type: "enabled" as const, budgetTokens } })),
        fc.constantFrom({ thinking: { type: "disabled" as const } }, { thinking: { type: "adaptive" as const } })
      ),
      stream: fc.boolean()
    },
    { requiredKeys: ["model", "system", "messages", "tools", "stream"] }
  )
  .map(withoutChoiceWhenNoTools)
  // A Gemini request keeps a function call's first answer (geminiRequestToIR.ts `Calls`: Gemini CLI resends one on
  // resume), so a call id answered in two turns is outside what round-trips; vendors never reuse one anyway.
  .filter((request) => {
    const ids = request.messages
      .flatMap((m) => (m.role === "assistant" ? m.content : []))
      .flatMap((part) => (part.type === "tool_call" ? [part.id] : []))
    return new Set(ids).size === ids.length
  })
