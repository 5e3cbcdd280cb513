import { assert, describe, it } from "@effect/vitest"
import { irToAnthropicRequest } from "../../../../src/plugins/text/convert/anthropic.ts"
import { anthropicRequestToIR } from "../../../../src/plugins/text/convert/anthropicRequestToIR.ts"
import { anthropicResponseToIR, irToAnthropicResponse } from "../../../../src/plugins/text/convert/anthropicResponse.ts"
import type { ChatRequest, ChatResponse } from "../../../../src/plugins/text/convert/ChatIR.ts"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIRequestToIR } from "../../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { restoreToolId, sanitizeToolId } from "../../../../src/plugins/text/convert/toolId.ts"
import { failure, ok } from "./helpers.ts"

const claudeCodeTurn = {
  model: "claude-sonnet-4-5",
  max_tokens: 4096,
  system: [
    { type: "text", text: "You are Claude Code.", cache_control: { type: "ephemeral" } },
    { type: "text", text: "Be brief." }
  ],
  messages: [
    { role: "user", content: "Weather in Oslo?" },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "User wants weather...", signature: "EqQB...opaque" },
        { type: "text", text: "Let me check.", citations: null },
        { type: "tool_use", id: "toolu_01XyZ", name: "get_weather", input: { city: "Oslo" } }
      ]
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_01XyZ", content: [{ type: "text", text: "12°C" }] },
        { type: "text", text: "And tomorrow?" },
        { type: "image", source: { type: "url", url: "https://example.com/map.png" } }
      ]
    }
  ],
  tools: [
    { name: "get_weather", description: "Weather", input_schema: { type: "object", properties: {} } },
    { type: "web_search_20250305", name: "web_search", max_uses: 3 }
  ],
  tool_choice: { type: "auto", disable_parallel_tool_use: true },
  thinking: { type: "enabled", budget_tokens: 2048 },
  stop_sequences: ["\n\nHuman:"],
  temperature: 1,
  top_k: 5,
  metadata: { user_id: "u-1" },
  stream: true,
  context_management: { edits: [] }
}

describe("anthropicRequestToIR", () => {
  it("given a Claude Code tool turn, when converted, then tool results split out and signatures stay genuine", () => {
    const ir = ok(anthropicRequestToIR(claudeCodeTurn))
    assert.deepStrictEqual(ir.system, [
      { type: "text", text: "You are Claude Code." },
      { type: "text", text: "Be brief." }
    ])
    assert.deepStrictEqual(
      ir.messages.map((m) => m.role),
      ["user", "assistant", "tool", "user"]
    )
    assert.deepStrictEqual(ir.messages[1].content[0], {
      type: "thinking",
      text: "User wants weather...",
      signature: "EqQB...opaque",
      signatureOrigin: "anthropic"
    })
    assert.deepStrictEqual(ir.messages[3].content, [
      { type: "text", text: "And tomorrow?" },
      { type: "image", source: { kind: "url", url: "https://example.com/map.png" } }
    ])
    assert.deepStrictEqual(
      ir.tools.map((t) => t.name),
      ["get_weather"]
    )
    assert.deepStrictEqual(ir.toolChoice, { type: "auto" })
    assert.strictEqual(ir.parallelToolCalls, false)
    assert.deepStrictEqual(ir.reasoning, { thinking: { type: "enabled", budgetTokens: 2048 } })
    assert.strictEqual(ir.topK, 5)
    assert.strictEqual(ir.user, "u-1")
  })

  it("given the same turn, when sent back to Anthropic, then the body is equivalent (signature kept, order kept)", () => {
    const body = ok(irToAnthropicRequest(ok(anthropicRequestToIR(claudeCodeTurn)), { defaultMaxTokens: 1024 }))
    assert.deepStrictEqual(body.messages, [
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: [
          { type: "thinking", thinking: "User wants weather...", signature: "EqQB...opaque" },
          { type: "text", text: "Let me check." },
          { type: "tool_use", id: "toolu_01XyZ", name: "get_weather", input: { city: "Oslo" } }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_01XyZ", content: "12°C" },
          { type: "text", text: "And tomorrow?" },
          { type: "image", source: { type: "url", url: "https://example.com/map.png" } }
        ]
      }
    ])
    assert.deepStrictEqual(body.thinking, { type: "enabled", budget_tokens: 2048 })
    assert.deepStrictEqual(body.tool_choice, { type: "auto", disable_parallel_tool_use: true })
    assert.strictEqual(body.temperature, undefined, "temperature is omitted when thinking is on")
  })

  it("given the same turn, when sent to an OpenAI-compatible upstream, then thinking becomes reasoning_content", () => {
    const body = ok(irToOpenAIRequest(ok(anthropicRequestToIR(claudeCodeTurn))))
    assert.deepStrictEqual(body.messages, [
      {
        role: "system",
        content: [
          { type: "text", text: "You are Claude Code." },
          { type: "text", text: "Be brief." }
        ]
      },
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: "Let me check.",
        reasoning_content: "User wants weather...",
        tool_calls: [
          { id: "toolu_01XyZ", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }
        ]
      },
      { role: "tool", tool_call_id: "toolu_01XyZ", content: "12°C" },
      {
        role: "user",
        content: [
          { type: "text", text: "And tomorrow?" },
          { type: "image_url", image_url: { url: "https://example.com/map.png" } }
        ]
      }
    ])
    assert.strictEqual(body.parallel_tool_calls, false)
    assert.strictEqual(body.reasoning_effort, "low")
    assert.strictEqual(body.max_completion_tokens, 4096)
    assert.deepStrictEqual(body.stop, ["\n\nHuman:"])
    assert.strictEqual(body.user, "u-1")
  })

  it("given unconvertible blocks, when converted, then a ConvertError names the param", () => {
    const turn = (content: unknown) => ({ model: "m", max_tokens: 10, messages: [{ role: "user", content }] })
    assert.strictEqual(
      failure(anthropicRequestToIR(turn([{ type: "document", source: { type: "base64", data: "x" } }]))).param,
      "messages.0.content.0.type"
    )
    assert.strictEqual(
      failure(anthropicRequestToIR(turn([{ type: "image", source: { type: "file", file_id: "f" } }]))).param,
      "messages.0.content.0.source.type"
    )
    assert.strictEqual(
      failure(anthropicRequestToIR(turn([{ type: "tool_result", tool_use_id: "toolu_x", content: "orphan" }]))).param,
      "messages.0"
    )
    assert.strictEqual(
      failure(anthropicRequestToIR({ model: "m", messages: [{ role: "bot", content: "x" }] })).param,
      "messages.0.role"
    )
  })

  it("given a flag that is not a boolean, when converted, then a ConvertError names it instead of reading false", () => {
    const call = {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_1", name: "f", input: {} }]
    }
    const result = (isError: unknown) => ({
      model: "m",
      max_tokens: 10,
      messages: [
        { role: "user", content: "hi" },
        call,
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "x", is_error: isError }] }
      ]
    })
    assert.strictEqual(failure(anthropicRequestToIR(result("yes"))).param, "messages.2.content.0.is_error")
    assert.isTrue(ok(anthropicRequestToIR(result(true))).messages.length > 0)
    const base = { model: "m", max_tokens: 10, messages: [{ role: "user", content: "hi" }] }
    const tool = { name: "f", input_schema: { type: "object" } }
    assert.strictEqual(
      failure(anthropicRequestToIR({ ...base, tools: [{ ...tool, strict: "true" }] })).param,
      "tools.0.strict"
    )
    assert.strictEqual(
      ok(anthropicRequestToIR({ ...base, tools: [{ ...tool, strict: true }] })).tools?.[0].strict,
      true
    )
    assert.strictEqual(
      failure(
        anthropicRequestToIR({ ...base, tools: [tool], tool_choice: { type: "auto", disable_parallel_tool_use: 1 } })
      ).param,
      "tool_choice.disable_parallel_tool_use"
    )
  })
})

describe("OpenAI client → Anthropic upstream", () => {
  const firstTurn = {
    model: "claude",
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: "Checking.",
        reasoning_content: "DeepSeek-style reasoning",
        tool_calls: [
          {
            id: "functions.get_weather:0",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Oslo"}' }
          }
        ]
      },
      { role: "tool", tool_call_id: "functions.get_weather:0", content: "12°C" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } }] }
    ],
    tools: [{ type: "function", function: { name: "get_weather" } }],
    parallel_tool_calls: false,
    temperature: 1.6,
    reasoning_effort: "high",
    max_tokens: 1000,
    response_format: { type: "json_object" }
  }

  it("given foreign tool ids, when converted, then tool_use and tool_result carry the same sanitized id", () => {
    const body = ok(irToAnthropicRequest(ok(openAIRequestToIR(firstTurn)), { defaultMaxTokens: 8192 }))
    const sanitized = sanitizeToolId("functions.get_weather:0")
    assert.match(sanitized, /^[a-zA-Z0-9_-]+$/)
    assert.deepStrictEqual(body.messages, [
      { role: "user", content: "Weather in Oslo?" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Checking." },
          { type: "tool_use", id: sanitized, name: "get_weather", input: { city: "Oslo" } }
        ]
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: sanitized, content: "12°C" },
          { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/4AAQ" } }
        ]
      }
    ])
    assert.deepStrictEqual(body.system, [
      { type: "text", text: "sys" },
      { type: "text", text: "Respond only with a single valid JSON object." }
    ])
    assert.deepStrictEqual(body.tools, [{ name: "get_weather", input_schema: { type: "object", properties: {} } }])
    assert.deepStrictEqual(body.tool_choice, { type: "auto", disable_parallel_tool_use: true })
    assert.strictEqual(body.max_tokens, 1000)
    // high effort wants 24576 tokens; the budget must stay below max_tokens, and 999 < 1024 leaves no room.
    assert.strictEqual(body.thinking, undefined)
    assert.strictEqual(body.temperature, 1, "temperature is clamped to Anthropic's 0..1")
  })

  it("given the Anthropic client echoes sanitized ids, when converted for an OpenAI upstream, then the original ids return", () => {
    const sanitized = sanitizeToolId("functions.get_weather:0")
    const ir = ok(
      anthropicRequestToIR({
        model: "m",
        max_tokens: 100,
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: [{ type: "tool_use", id: sanitized, name: "get_weather", input: {} }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: sanitized, content: "12°C" }] }
        ]
      })
    )
    const body = ok(irToOpenAIRequest(ir))
    const messages = body.messages as ReadonlyArray<Record<string, unknown>>
    assert.strictEqual((messages[1].tool_calls as ReadonlyArray<{ id: string }>)[0].id, "functions.get_weather:0")
    assert.strictEqual(messages[2].tool_call_id, "functions.get_weather:0")
  })

  it("given effort and room, when converted, then thinking gets the effort budget and sampling is dropped", () => {
    const body = ok(
      irToAnthropicRequest(ok(openAIRequestToIR({ ...firstTurn, max_tokens: 30000 })), { defaultMaxTokens: 8192 })
    )
    assert.deepStrictEqual(body.thinking, { type: "enabled", budget_tokens: 24576 })
    assert.strictEqual(body.temperature, undefined)
  })

  it("given forced tool use with thinking, when converted, then thinking is dropped (Anthropic rejects the pair)", () => {
    const ir: ChatRequest = {
      model: "m",
      system: [],
      messages: [{ role: "user", content: [{ type: "text", text: "go" }] }],
      tools: [{ name: "f", parameters: { type: "object" } }],
      toolChoice: { type: "tool", name: "f" },
      reasoning: { effort: "medium" },
      stream: false
    }
    const body = ok(irToAnthropicRequest(ir, { defaultMaxTokens: 16000 }))
    assert.strictEqual(body.thinking, undefined)
    assert.deepStrictEqual(body.tool_choice, { type: "tool", name: "f" })
    assert.strictEqual(body.max_tokens, 16000)
  })

  it("given synthetic or unsigned thinking, when sent to Anthropic, then those blocks are stripped", () => {
    const ir: ChatRequest = {
      model: "m",
      system: [],
      tools: [],
      stream: false,
      messages: [
        { role: "user", content: [{ type: "text", text: "q" }] },
        {
          role: "assistant",
          content: [
            { type: "thinking", text: "from deepseek", signature: "gw1.abcd1234", signatureOrigin: "synthetic" },
            { type: "thinking", text: "no signature" },
            { type: "thinking", text: "real", signature: "EqQB", signatureOrigin: "anthropic" },
            { type: "text", text: "answer" }
          ]
        }
      ]
    }
    const body = ok(irToAnthropicRequest(ir, { defaultMaxTokens: 100 }))
    assert.deepStrictEqual((body.messages as ReadonlyArray<unknown>)[1], {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "real", signature: "EqQB" },
        { type: "text", text: "answer" }
      ]
    })
  })

  it("given a synthetic signature coming back from an Anthropic client, when parsed, then it is marked synthetic", () => {
    const ir = ok(
      anthropicRequestToIR({
        model: "m",
        max_tokens: 5,
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: [{ type: "thinking", thinking: "t", signature: "gw1.0badc0de" }] }
        ]
      })
    )
    assert.deepStrictEqual(ir.messages[1].content[0], {
      type: "thinking",
      text: "t",
      signature: "gw1.0badc0de",
      signatureOrigin: "synthetic"
    })
  })

  it("given an unsupported image type, when sent to Anthropic, then it is a ConvertError", () => {
    const ir = ok(
      openAIRequestToIR({
        model: "m",
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "data:image/bmp;base64,Qk0=" } }] }]
      })
    )
    assert.strictEqual(failure(irToAnthropicRequest(ir, { defaultMaxTokens: 10 })).param, "messages.0.content.0")
  })
})

describe("Anthropic responses", () => {
  const upstream = {
    id: "msg_01AbCdEf",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content: [
      { type: "thinking", thinking: "User wants weather...", signature: "EqQB...opaque" },
      { type: "text", text: "Let me check.", citations: null },
      { type: "tool_use", id: "toolu_01XyZ", name: "get_weather", input: { city: "Oslo" }, caller: { type: "direct" } },
      { type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: {} }
    ],
    stop_reason: "tool_use",
    stop_sequence: null,
    stop_details: null,
    usage: {
      input_tokens: 412,
      output_tokens: 95,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 2048,
      output_tokens_details: { thinking_tokens: 40 },
      service_tier: "standard"
    }
  }

  it("given a tool_use response, when converted, then blocks keep their order and usage excludes cache", () => {
    const ir = ok(anthropicResponseToIR(upstream))
    assert.deepStrictEqual(ir, {
      id: "msg_01AbCdEf",
      model: "claude-sonnet-4-5",
      content: [
        { type: "thinking", text: "User wants weather...", signature: "EqQB...opaque", signatureOrigin: "anthropic" },
        { type: "text", text: "Let me check." },
        { type: "tool_call", id: "toolu_01XyZ", name: "get_weather", input: { city: "Oslo" } }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 412, outputTokens: 95, cacheReadTokens: 2048, cacheWriteTokens: 0, reasoningTokens: 40 }
    })
  })

  it("given an OpenAI-sourced response, when encoded for an Anthropic client, then reasoning is signed gw1 and ids sanitized", () => {
    const ir: ChatResponse = {
      id: "msg_gw",
      model: "deepseek-reasoner",
      content: [
        { type: "thinking", text: "reasoning" },
        { type: "tool_call", id: "call|1", name: "f", input: {} }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 5, outputTokens: 7, cacheReadTokens: 3, cacheWriteTokens: 0, reasoningTokens: 0 }
    }
    const body = irToAnthropicResponse(ir)
    const content = body.content as ReadonlyArray<Record<string, unknown>>
    assert.match(String(content[0].signature), /^gw1\.[0-9a-f]{8}$/)
    assert.strictEqual(content[1].id, sanitizeToolId("call|1"))
    assert.strictEqual(restoreToolId(String(content[1].id)), "call|1")
    assert.deepStrictEqual(body.usage, {
      input_tokens: 5,
      cache_creation_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      cache_read_input_tokens: 3,
      output_tokens: 7
    })
    assert.strictEqual(body.stop_sequence, null)
  })
})
