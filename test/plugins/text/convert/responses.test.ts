import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import type {
  AssistantPart,
  ChatRequest,
  ChatResponse,
  Message,
  ToolDefinition
} from "../../../../src/plugins/text/convert/ChatIR.ts"
import { irToResponsesRequest } from "../../../../src/plugins/text/convert/responses.ts"
import { responsesRequestToIR } from "../../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { irToResponsesResponse, responsesResponseToIR } from "../../../../src/plugins/text/convert/responsesResponse.ts"
import { toResponsesUpstream } from "../../../../src/plugins/text/convert/responsesUpstream.ts"
import { failure, ok } from "./helpers.ts"

const wire = <A>(value: A): unknown => JSON.parse(JSON.stringify(value))
const nonEmpty = fc.string({ minLength: 1, maxLength: 12 })
const name = fc.stringMatching(/^[a-zA-Z0-9_-]{1,16}$/)
const args = fc.dictionary(fc.stringMatching(/^[a-z]{1,6}$/), fc.oneof(fc.integer(), fc.string({ maxLength: 6 })), {
  maxKeys: 3
})
const count = fc.nat({ max: 1_000_000 })
const signature = nonEmpty.filter((s) => !s.startsWith("gw1."))

/** Thinking as each vendor signs it, or as nobody did (then it must have text to survive). */
const thinking: fc.Arbitrary<AssistantPart> = fc.oneof(
  fc
    .record({ text: fc.string({ maxLength: 8 }), signature, origin: fc.constantFrom("anthropic", "gemini", "openai") })
    .map(({ text, signature, origin }) => ({
      type: "thinking" as const,
      text,
      signature,
      signatureOrigin: origin as "anthropic" | "gemini" | "openai"
    })),
  nonEmpty.map((text) => ({ type: "thinking" as const, text })),
  nonEmpty.map((data) => ({ type: "redacted_thinking" as const, data }))
)

const toolCall = fc
  .record({ id: nonEmpty.filter((s) => !s.startsWith("gts1.")), name, input: args })
  .map((c) => ({ type: "tool_call" as const, ...c }))

/** What a Response's output can say: no two texts in a row (one message item holds them), no empty text. */
const responseContent = fc
  .array(
    fc.oneof(
      nonEmpty.map((text) => ({ type: "text" as const, text })),
      thinking,
      toolCall
    ),
    { maxLength: 5 }
  )
  .map((parts) => parts.filter((part, index) => !(part.type === "text" && parts[index - 1]?.type === "text")))

const response: fc.Arbitrary<ChatResponse> = fc
  .record({
    id: nonEmpty,
    model: nonEmpty,
    content: responseContent,
    stop: fc.constantFrom("end_turn", "max_tokens"),
    usage: fc.record({
      inputTokens: count,
      outputTokens: count,
      cacheReadTokens: count,
      cacheWriteTokens: count,
      reasoningTokens: count
    })
  })
  .map(({ id, model, content, stop, usage }) => ({
    id,
    model,
    content,
    stopReason: stop === "end_turn" && content.some((p) => p.type === "tool_call") ? "tool_use" : stop,
    usage
  }))

const tool: fc.Arbitrary<ToolDefinition> = fc.record({
  name,
  description: nonEmpty,
  parameters: fc.constant({ type: "object", properties: { city: { type: "string" } } }),
  strict: fc.boolean()
})

/** A conversation the Responses API can carry: alternating turns, OpenAI's own reasoning only, tool results answered. */
const request: fc.Arbitrary<ChatRequest> = fc
  .record({
    system: fc.array(
      nonEmpty.map((text) => ({ type: "text" as const, text })),
      { maxLength: 1 }
    ),
    turns: fc.array(
      fc.record({
        user: nonEmpty,
        reasoning: fc.option(fc.record({ text: nonEmpty, signature }), { nil: undefined }),
        answer: fc.option(nonEmpty, { nil: undefined }),
        call: fc.option(toolCall, { nil: undefined }),
        result: nonEmpty
      }),
      { minLength: 1, maxLength: 3 }
    ),
    tools: fc.array(tool, { maxLength: 2 }),
    maxTokens: fc.option(fc.integer({ min: 16, max: 4096 }), { nil: undefined }),
    temperature: fc.option(fc.double({ min: 0, max: 2, noNaN: true }), { nil: undefined }),
    effort: fc.option(fc.constantFrom("low", "medium", "high"), { nil: undefined }),
    stream: fc.boolean()
  })
  .map(({ system, turns, tools, maxTokens, temperature, effort, stream }) => {
    const messages: Array<Message> = []
    turns.forEach((turn, index) => {
      messages.push({ role: "user", content: [{ type: "text", text: turn.user }] })
      const content: Array<AssistantPart> = []
      if (turn.reasoning !== undefined) {
        content.push({ type: "thinking", ...turn.reasoning, signatureOrigin: "openai" })
      }
      if (turn.answer !== undefined) content.push({ type: "text", text: turn.answer })
      const call = turn.call === undefined ? undefined : { ...turn.call, id: `${turn.call.id}${index}` }
      if (call !== undefined) content.push(call)
      if (content.length > 0 && index < turns.length - 1) {
        messages.push({ role: "assistant", content })
        if (call !== undefined) {
          messages.push({
            role: "tool",
            content: [
              {
                type: "tool_result",
                toolCallId: call.id,
                content: [{ type: "text", text: turn.result }],
                isError: false
              }
            ]
          })
        }
      }
    })
    return {
      model: "m",
      system,
      messages,
      tools,
      ...(tools.length > 0 ? { toolChoice: { type: "auto" as const }, parallelToolCalls: true } : {}),
      ...(maxTokens === undefined ? {} : { maxTokens }),
      ...(temperature === undefined ? {} : { temperature }),
      ...(effort === undefined ? {} : { reasoning: { effort } }),
      stream
    } satisfies ChatRequest
  })
  .filter((r) => !r.messages.some((m, i) => m.role === "user" && r.messages[i - 1]?.role === "user"))

describe("the Responses API through the chat IR", () => {
  it("property: IR → Response object → IR is the identity (signatures keep their vendor)", () => {
    fc.assert(
      fc.property(response, (ir) => {
        const body = irToResponsesResponse(ir, { id: ir.id, model: ir.model, createdAt: 1 }, {})
        assert.deepStrictEqual(ok(responsesResponseToIR(wire(body))), ir)
      }),
      { numRuns: 300 }
    )
  })

  it("property: IR → Responses request → IR is the identity for what the API can say", () => {
    fc.assert(
      fc.property(request, (ir) => {
        const body = { ...ok(irToResponsesRequest(ir)), model: ir.model }
        assert.deepStrictEqual(ok(responsesRequestToIR(wire(body))), ir)
      }),
      { numRuns: 300 }
    )
  })

  it("another vendor's reasoning never goes to OpenAI", () => {
    const body = ok(
      irToResponsesRequest({
        model: "m",
        system: [],
        messages: [
          { role: "user", content: [{ type: "text", text: "q" }] },
          {
            role: "assistant",
            content: [
              { type: "thinking", text: "t", signature: "anthropic-sig", signatureOrigin: "anthropic" },
              { type: "thinking", text: "u" },
              { type: "text", text: "a" }
            ]
          },
          { role: "user", content: [{ type: "text", text: "again" }] }
        ],
        tools: [],
        stream: false
      })
    )
    assert.deepStrictEqual(
      (body.input as ReadonlyArray<{ type?: string }>).map((item) => item.type ?? "message"),
      ["message", "message", "message"]
    )
    assert.isFalse(body.store)
  })

  it("a Responses client's own body keeps only OpenAI's reasoning and nothing the gateway owns", () => {
    const upstream = toResponsesUpstream(
      {
        model: "alias",
        previous_response_id: "resp_1",
        background: true,
        store: true,
        include: ["message.output_text.logprobs"],
        input: [
          { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "openai-blob" },
          { type: "reasoning", id: "rs_2", summary: [], encrypted_content: "gw1.anthropic.sig" },
          { type: "reasoning", id: "rs_3", summary: [{ type: "summary_text", text: "no content" }] },
          { role: "user", content: "hi" }
        ]
      },
      "gpt-x"
    )
    assert.deepStrictEqual(upstream, {
      model: "gpt-x",
      input: [
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "openai-blob" },
        { role: "user", content: "hi" }
      ],
      store: false,
      include: ["message.output_text.logprobs", "reasoning.encrypted_content"]
    })
  })

  it("what only the Responses API can say is noted, not dropped", () => {
    const ir = ok(
      responsesRequestToIR({
        model: "m",
        input: [
          { role: "user", content: [{ type: "input_file", file_data: "data:application/pdf;base64,AAAA" }] },
          { type: "web_search_call", id: "ws_1", status: "completed" }
        ],
        tools: [{ type: "web_search" }, { type: "function", name: "f", parameters: { type: "object" } }]
      })
    )
    assert.deepStrictEqual(
      ir.nativeOnly?.map((p) => p.param),
      ["input.0.content.0", "input.1"]
    )
    // A hosted tool is the vendor's to run: listed apart, left out or refused by the plugin as the operator chose.
    assert.deepStrictEqual(ir.hostedTools, [{ param: "tools.0", type: "web_search" }])
    assert.deepStrictEqual(
      ir.tools.map((t) => t.name),
      ["f"]
    )
  })

  it("items between two user turns are one assistant turn; consecutive outputs one tool turn", () => {
    const ir = ok(
      responsesRequestToIR({
        model: "m",
        instructions: "be brief",
        input: [
          { role: "developer", content: "and kind" },
          { role: "user", content: "weather?" },
          {
            type: "reasoning",
            id: "rs",
            summary: [{ type: "summary_text", text: "think" }],
            encrypted_content: "gw1.anthropic.S"
          },
          { type: "function_call", call_id: "a", name: "w", arguments: '{"city":"Paris"}' },
          { type: "function_call", call_id: "b", name: "w", arguments: '{"city":"Rome"}' },
          { type: "function_call_output", call_id: "a", output: "21" },
          { type: "function_call_output", call_id: "b", output: [{ type: "input_text", text: "25" }] }
        ]
      })
    )
    assert.deepStrictEqual(ir.system, [
      { type: "text", text: "be brief" },
      { type: "text", text: "and kind" }
    ])
    assert.deepStrictEqual(
      ir.messages.map((m) => [m.role, m.content.length]),
      [
        ["user", 1],
        ["assistant", 3],
        ["tool", 2]
      ]
    )
    assert.deepStrictEqual(ir.messages[1].content[0], {
      type: "thinking",
      text: "think",
      signature: "S",
      signatureOrigin: "anthropic"
    })
  })

  it("refuses what is malformed, naming the field", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ model: "m", input: 1 }, "input"],
      [{ model: "m", input: [] }, "input"],
      [{ model: "m", input: [{ type: "function_call_output", call_id: "x", output: "1" }] }, "input.0"],
      [
        { model: "m", input: [{ type: "function_call", call_id: "x", name: "f", arguments: "[1]" }] },
        "input.0.arguments"
      ],
      [{ model: "m", input: [{ role: "user", content: [{ type: "input_audio" }] }] }, "input.0.content.0.type"],
      [{ model: "m", input: [{ type: "item_reference", id: "x" }] }, "input.0.id"],
      [{ model: "m", input: "x", text: { format: { type: "json_schema" } } }, "text.format.schema"],
      [{ model: "m", input: "x", max_output_tokens: 0 }, "max_output_tokens"]
    ]
    for (const [body, param] of cases)
      assert.strictEqual(failure(responsesRequestToIR(body)).param, param, JSON.stringify(body))
  })
})
