import { assert, describe, it } from "@effect/vitest"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIRequestToIR } from "../../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { irToOpenAIResponse, openAIResponseToIR } from "../../../../src/plugins/text/convert/openaiResponse.ts"
import type { ChatRequest, ChatResponse } from "../../../../src/plugins/text/convert/ChatIR.ts"
import { failure, ok } from "./helpers.ts"

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}

const twoTurnToolRequest = {
  model: "gpt-4o-mini",
  messages: [
    { role: "system", content: "You are terse." },
    { role: "developer", content: [{ type: "text", text: "Use metric units." }] },
    {
      role: "user",
      content: [
        { type: "text", text: "Weather in Oslo and Bergen? Also, what is in this picture?" },
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=", detail: "high" } }
      ]
    },
    {
      role: "assistant",
      content: null,
      reasoning_content: "Two cities, two calls.",
      tool_calls: [
        { id: "call_a1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
        {
          id: "functions.get_weather:1",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Bergen"}' }
        }
      ]
    },
    { role: "tool", tool_call_id: "call_a1", content: "12°C, rain" },
    { role: "tool", tool_call_id: "functions.get_weather:1", content: [{ type: "text", text: "9°C, wind" }] },
    { role: "user", content: "Thanks. Which is warmer?" }
  ],
  tools: [weatherTool],
  tool_choice: "auto",
  parallel_tool_calls: false,
  max_completion_tokens: 512,
  stop: "END",
  temperature: 0.7,
  top_p: 0.9,
  reasoning_effort: "low",
  stream: true,
  stream_options: { include_usage: true, include_obfuscation: false },
  user: "user-42",
  seed: 7,
  logit_bias: { "50256": -100 },
  brand_new_field: { anything: true }
}

describe("openAIRequestToIR", () => {
  it("given a two-turn tool conversation, when converted, then system is hoisted and tool messages merge", () => {
    const ir = ok(openAIRequestToIR(twoTurnToolRequest))
    assert.deepStrictEqual(ir.system, [
      { type: "text", text: "You are terse." },
      { type: "text", text: "Use metric units." }
    ])
    assert.deepStrictEqual(
      ir.messages.map((m) => m.role),
      ["user", "assistant", "tool", "user"]
    )
    assert.deepStrictEqual(ir.messages[0].content[1], {
      type: "image",
      source: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" }
    })
    assert.deepStrictEqual(ir.messages[1].content, [
      { type: "thinking", text: "Two cities, two calls." },
      { type: "tool_call", id: "call_a1", name: "get_weather", input: { city: "Oslo" } },
      { type: "tool_call", id: "functions.get_weather:1", name: "get_weather", input: { city: "Bergen" } }
    ])
    assert.deepStrictEqual(ir.messages[2].content, [
      { type: "tool_result", toolCallId: "call_a1", content: [{ type: "text", text: "12°C, rain" }], isError: false },
      {
        type: "tool_result",
        toolCallId: "functions.get_weather:1",
        content: [{ type: "text", text: "9°C, wind" }],
        isError: false
      }
    ])
    assert.strictEqual(ir.maxTokens, 512)
    assert.deepStrictEqual(ir.stop, ["END"])
    assert.deepStrictEqual(ir.toolChoice, { type: "auto" })
    assert.strictEqual(ir.parallelToolCalls, false)
    assert.deepStrictEqual(ir.reasoning, { effort: "low" })
    assert.strictEqual(ir.includeUsage, true)
    assert.strictEqual(ir.user, "user-42")
    assert.strictEqual(ir.stream, true)
  })

  it("given max_tokens only, when converted, then it becomes maxTokens", () => {
    const ir = ok(openAIRequestToIR({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 99 }))
    assert.strictEqual(ir.maxTokens, 99)
  })

  it("given a flag that is not a boolean, when converted, then a ConvertError names it instead of reading false", () => {
    const base = { model: "m", messages: [{ role: "user", content: "hi" }] }
    const fn = { name: "f", parameters: { type: "object" } }
    assert.strictEqual(
      failure(openAIRequestToIR({ ...base, tools: [{ type: "function", function: { ...fn, strict: "yes" } }] })).param,
      "tools.0.function.strict"
    )
    assert.strictEqual(
      ok(openAIRequestToIR({ ...base, tools: [{ type: "function", function: { ...fn, strict: true } }] })).tools?.[0]
        .strict,
      true
    )
    const format = (strict: unknown) => ({
      ...base,
      response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" }, strict } }
    })
    assert.strictEqual(failure(openAIRequestToIR(format(1))).param, "response_format.json_schema.strict")
    assert.isDefined(ok(openAIRequestToIR(format(null))).responseFormat)
  })

  it("given unconvertible input, when converted, then a ConvertError names the param", () => {
    const base = { model: "m", messages: [{ role: "user", content: "hi" }] }
    assert.strictEqual(failure(openAIRequestToIR({ ...base, n: 2 })).param, "n")
    assert.strictEqual(
      failure(
        openAIRequestToIR({
          ...base,
          messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAA", format: "wav" } }] }]
        })
      ).param,
      "messages.0.content.0"
    )
    assert.strictEqual(
      failure(openAIRequestToIR({ ...base, messages: [{ role: "narrator", content: "x" }] })).param,
      "messages.0.role"
    )
    assert.strictEqual(
      failure(
        openAIRequestToIR({
          ...base,
          messages: [
            { role: "user", content: "hi" },
            { role: "tool", tool_call_id: "call_x", content: "orphan" }
          ]
        })
      ).param,
      "messages.1"
    )
    assert.strictEqual(
      failure(
        openAIRequestToIR({
          ...base,
          messages: [
            {
              role: "assistant",
              tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{bad" } }]
            }
          ]
        })
      ).param,
      "messages.0.tool_calls.0.function.arguments"
    )
    assert.strictEqual(failure(openAIRequestToIR("not an object")).param, "")
    assert.strictEqual(failure(openAIRequestToIR({ model: "m", messages: [] })).param, "messages")
  })

  it("given allowed_tools and json_schema, when converted, then tools are filtered and the schema is kept", () => {
    const ir = ok(
      openAIRequestToIR({
        model: "m",
        messages: [{ role: "user", content: "hi" }],
        tools: [weatherTool, { type: "function", function: { name: "other" } }],
        tool_choice: {
          type: "allowed_tools",
          allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "get_weather" } }] }
        },
        response_format: {
          type: "json_schema",
          json_schema: { name: "answer", schema: { type: "object" }, strict: true }
        }
      })
    )
    assert.deepStrictEqual(
      ir.tools.map((t) => t.name),
      ["get_weather"]
    )
    assert.deepStrictEqual(ir.toolChoice, { type: "any" })
    assert.deepStrictEqual(ir.responseFormat, {
      type: "json_schema",
      name: "answer",
      schema: { type: "object" },
      strict: true
    })
  })
})

describe("irToOpenAIRequest", () => {
  it("given an IR request, when converted back, then the OpenAI body carries the same conversation", () => {
    const ir = ok(openAIRequestToIR(twoTurnToolRequest))
    const body = ok(irToOpenAIRequest(ir))
    assert.deepStrictEqual(body.messages, [
      {
        role: "system",
        content: [
          { type: "text", text: "You are terse." },
          { type: "text", text: "Use metric units." }
        ]
      },
      {
        role: "user",
        content: [
          { type: "text", text: "Weather in Oslo and Bergen? Also, what is in this picture?" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }
        ]
      },
      {
        role: "assistant",
        content: null,
        reasoning_content: "Two cities, two calls.",
        tool_calls: [
          { id: "call_a1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } },
          {
            id: "functions.get_weather:1",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Bergen"}' }
          }
        ]
      },
      { role: "tool", tool_call_id: "call_a1", content: "12°C, rain" },
      { role: "tool", tool_call_id: "functions.get_weather:1", content: "9°C, wind" },
      { role: "user", content: "Thanks. Which is warmer?" }
    ])
    assert.strictEqual(body.max_completion_tokens, 512)
    assert.deepStrictEqual(body.stream_options, { include_usage: true })
    assert.strictEqual(body.reasoning_effort, "low")
    assert.strictEqual(body.seed, undefined)
  })

  it("given a stream request without include_usage, when sent upstream, then include_usage is forced on", () => {
    const ir: ChatRequest = { model: "m", system: [], messages: [], tools: [], stream: true }
    assert.deepStrictEqual(ok(irToOpenAIRequest(ir)).stream_options, { include_usage: true })
  })

  it("given signed Anthropic thinking and an errored tool result with an image, when converted, then reasoning is text and the image moves to a user message", () => {
    const ir: ChatRequest = {
      model: "deepseek-reasoner",
      system: [],
      tools: [],
      stream: false,
      reasoning: { thinking: { type: "enabled", budgetTokens: 20000 } },
      messages: [
        { role: "user", content: [{ type: "text", text: "chart it" }] },
        {
          role: "assistant",
          content: [
            { type: "thinking", text: "plot", signature: "EqQB", signatureOrigin: "anthropic" },
            { type: "redacted_thinking", data: "xx" },
            { type: "tool_call", id: "toolu_1", name: "plot", input: {} }
          ]
        },
        {
          role: "tool",
          content: [
            {
              type: "tool_result",
              toolCallId: "toolu_1",
              isError: true,
              content: [
                { type: "text", text: "partial" },
                { type: "image", source: { kind: "url", url: "https://x/y.png" } }
              ]
            }
          ]
        }
      ]
    }
    const body = ok(irToOpenAIRequest(ir, { maxTokensField: "max_tokens", systemRole: "developer" }))
    assert.deepStrictEqual(body.messages, [
      { role: "user", content: "chart it" },
      {
        role: "assistant",
        content: null,
        reasoning_content: "plot",
        tool_calls: [{ id: "toolu_1", type: "function", function: { name: "plot", arguments: "{}" } }]
      },
      { role: "tool", tool_call_id: "toolu_1", content: "Error: partial" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "https://x/y.png" } }] }
    ])
    assert.strictEqual(body.reasoning_effort, "high")
  })
})

describe("OpenAI responses", () => {
  const upstream = {
    id: "chatcmpl-9xYz",
    object: "chat.completion",
    created: 1760000000,
    model: "gpt-4o-mini-2024-07-18",
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: null,
          refusal: null,
          reasoning_content: "Need weather.",
          tool_calls: [
            { id: "call_a1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }
          ],
          annotations: []
        },
        logprobs: null,
        finish_reason: "stop"
      }
    ],
    usage: {
      prompt_tokens: 81,
      completion_tokens: 17,
      total_tokens: 98,
      prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 5 }
    },
    service_tier: "default",
    obfuscation: "xyz"
  }

  it("given a named-tool response with finish_reason stop, when converted, then the stop reason is tool_use", () => {
    const ir = ok(openAIResponseToIR(upstream))
    assert.strictEqual(ir.stopReason, "tool_use")
    assert.deepStrictEqual(ir.content, [
      { type: "thinking", text: "Need weather." },
      { type: "tool_call", id: "call_a1", name: "get_weather", input: { city: "Oslo" } }
    ])
    assert.deepStrictEqual(ir.usage, {
      inputTokens: 17,
      outputTokens: 17,
      cacheReadTokens: 64,
      cacheWriteTokens: 0,
      reasoningTokens: 5
    })
  })

  it("given an IR response from Anthropic, when encoded for an OpenAI client, then usage adds cache back into prompt_tokens", () => {
    const ir: ChatResponse = {
      id: "msg_01",
      model: "claude-sonnet-4-5",
      content: [
        { type: "thinking", text: "hmm", signature: "sig", signatureOrigin: "anthropic" },
        { type: "text", text: "Let me " },
        { type: "text", text: "check." },
        { type: "tool_call", id: "toolu_01", name: "get_weather", input: { city: "Oslo" } }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 412, outputTokens: 95, cacheReadTokens: 2048, cacheWriteTokens: 10, reasoningTokens: 40 }
    }
    assert.deepStrictEqual(irToOpenAIResponse(ir, { created: 1760000001, id: "chatcmpl-gw1" }), {
      id: "chatcmpl-gw1",
      object: "chat.completion",
      created: 1760000001,
      model: "claude-sonnet-4-5",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: "Let me check.",
            refusal: null,
            reasoning_content: "hmm",
            tool_calls: [
              { id: "toolu_01", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }
            ]
          },
          logprobs: null,
          finish_reason: "tool_calls"
        }
      ],
      usage: {
        prompt_tokens: 2470,
        completion_tokens: 95,
        total_tokens: 2565,
        prompt_tokens_details: { cached_tokens: 2048, cache_write_tokens: 10 },
        completion_tokens_details: { reasoning_tokens: 40 }
      }
    })
  })

  it("given finish reasons, when mapped, then length/content_filter survive and unknown values read as end_turn", () => {
    const withFinish = (finish_reason: unknown) =>
      ok(openAIResponseToIR({ ...upstream, choices: [{ index: 0, message: { content: "x" }, finish_reason }] }))
        .stopReason
    assert.strictEqual(withFinish("length"), "max_tokens")
    assert.strictEqual(withFinish("content_filter"), "refusal")
    assert.strictEqual(withFinish("stop"), "end_turn")
    assert.strictEqual(withFinish("something_new"), "end_turn")
    assert.strictEqual(withFinish(null), "end_turn")
  })

  it("given a response without choices, when converted, then it is a ConvertError", () => {
    assert.strictEqual(failure(openAIResponseToIR({ id: "x", choices: [] })).param, "choices")
  })
})
