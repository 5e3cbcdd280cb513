import { assert, describe, it } from "@effect/vitest"
import type { UpstreamEvent } from "../../../../src/plugins/text/convert/ChatStream.ts"
import {
  makeStreamTransducer,
  type StreamTransducerOptions
} from "../../../../src/plugins/text/convert/StreamTransducer.ts"
import { sanitizeToolId } from "../../../../src/plugins/text/convert/toolId.ts"
import { anthropicEvents, openAIChunks, readFrames } from "./helpers.ts"

const base = { created: 1760000000, fallbackId: "gw-fallback", fallbackModel: "fallback-model" } as const

const run = (options: Omit<StreamTransducerOptions, keyof typeof base>, events: ReadonlyArray<UpstreamEvent>) => {
  const transducer = makeStreamTransducer({ ...base, ...options })
  const frames = events.flatMap((e) => transducer.push(e))
  frames.push(...transducer.end())
  return { frames, parsed: readFrames(frames), snapshot: transducer.snapshot(), transducer }
}

/** Anthropic's documented stream sequence: thinking with signature, text, a tool call with split JSON. */
const anthropicToolStream = anthropicEvents([
  {
    type: "message_start",
    message: {
      id: "msg_01Ab",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 412, cache_creation_input_tokens: 0, cache_read_input_tokens: 100, output_tokens: 1 }
    }
  },
  { type: "ping" },
  { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "User wants weather" } },
  { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature: "EqQB...opaque" } },
  { type: "content_block_stop", index: 0 },
  { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Let me check." } },
  { type: "content_block_stop", index: 1 },
  {
    type: "content_block_start",
    index: 2,
    content_block: { type: "tool_use", id: "toolu_01XyZ", name: "get_weather", input: {} }
  },
  { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"city": "Os' } },
  { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: 'lo"}' } },
  { type: "content_block_stop", index: 2 },
  {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 95, output_tokens_details: { thinking_tokens: 20 } }
  },
  { type: "message_stop" }
])

const chunkDeltas = (parsed: ReturnType<typeof readFrames>): Array<unknown> =>
  parsed.map((f): unknown => {
    if (f.data === "[DONE]") return "[DONE]"
    const data = f.data as { choices: Array<{ delta: unknown; finish_reason: unknown }>; usage?: unknown }
    return data.choices.length === 0 ? { usage: data.usage } : { ...data.choices[0] }
  })

describe("Anthropic upstream → OpenAI client", () => {
  it("given a tool-use stream and include_usage, then chunks follow in order, usage chunk then [DONE] last", () => {
    const { parsed, snapshot } = run(
      { upstream: "anthropic", client: "openai", includeUsage: true },
      anthropicToolStream
    )
    assert.isTrue(
      parsed.every((f) => f.event === undefined),
      "OpenAI frames have no event: line"
    )
    const first = parsed[0].data as Record<string, unknown>
    assert.strictEqual(first.id, "chatcmpl-msg_01Ab")
    assert.strictEqual(first.object, "chat.completion.chunk")
    assert.strictEqual(first.created, 1760000000)
    assert.strictEqual(first.usage, null)
    assert.deepStrictEqual(chunkDeltas(parsed), [
      {
        index: 0,
        delta: { role: "assistant", content: null, reasoning_content: "User wants weather" },
        logprobs: null,
        finish_reason: null
      },
      { index: 0, delta: { content: "Let me check." }, logprobs: null, finish_reason: null },
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: "toolu_01XyZ", type: "function", function: { name: "get_weather", arguments: "" } }
          ]
        },
        logprobs: null,
        finish_reason: null
      },
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"city": "Os' } }] },
        logprobs: null,
        finish_reason: null
      },
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: 'lo"}' } }] },
        logprobs: null,
        finish_reason: null
      },
      { index: 0, delta: {}, logprobs: null, finish_reason: "tool_calls" },
      {
        usage: {
          prompt_tokens: 512,
          completion_tokens: 95,
          total_tokens: 607,
          prompt_tokens_details: { cached_tokens: 100 },
          completion_tokens_details: { reasoning_tokens: 20 }
        }
      },
      "[DONE]"
    ])
    assert.deepStrictEqual(snapshot, {
      usage: { inputTokens: 412, outputTokens: 95, cacheReadTokens: 100, cacheWriteTokens: 0, reasoningTokens: 20 },
      stopReason: "tool_use",
      truncated: false,
      finished: true,
      delivered: { text: "Let me check.", thinking: "User wants weather", toolArguments: '{"city": "Oslo"}' }
    })
  })

  it("given the client did not ask for usage, then no chunk has usage and no choices:[] chunk is sent", () => {
    const { parsed } = run({ upstream: "anthropic", client: "openai", includeUsage: false }, anthropicToolStream)
    assert.isTrue(parsed.every((f) => f.data === "[DONE]" || !("usage" in (f.data as object))))
    assert.isTrue(
      parsed.every((f) => f.data === "[DONE]" || (f.data as { choices: Array<unknown> }).choices.length === 1)
    )
    assert.strictEqual(parsed[parsed.length - 1].data, "[DONE]")
  })

  it("given an error event mid-stream, then an in-band error is the last frame and [DONE] is not sent", () => {
    const transducer = makeStreamTransducer({ ...base, upstream: "anthropic", client: "openai", includeUsage: true })
    const frames = [
      ...anthropicToolStream.slice(0, 7).flatMap((e) => transducer.push(e)),
      ...transducer.push({
        event: "error",
        data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }
      }),
      ...transducer.push(anthropicToolStream[7]),
      ...transducer.end()
    ]
    const parsed = readFrames(frames)
    assert.deepStrictEqual(parsed[parsed.length - 1].data, {
      error: { message: "Overloaded", type: "service_unavailable_error", param: null, code: null }
    })
    assert.isFalse(frames.includes("data: [DONE]\n\n"))
    assert.deepStrictEqual(transducer.snapshot().error, { kind: "overloaded", message: "Overloaded" })
    assert.strictEqual(transducer.snapshot().delivered.text, "")
  })

  it("given upstream EOF inside a tool block, then the call is finished with finish_reason and [DONE]", () => {
    const { parsed, snapshot } = run({ upstream: "anthropic", client: "openai" }, anthropicToolStream.slice(0, 11))
    const deltas = chunkDeltas(parsed)
    assert.deepStrictEqual(deltas.slice(-2), [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }, "[DONE]"])
    assert.isTrue(snapshot.truncated)
    assert.strictEqual(snapshot.stopReason, "end_turn")
    assert.deepStrictEqual(snapshot.usage?.inputTokens, 412, "input usage from message_start survives a cut")
    assert.strictEqual(snapshot.delivered.toolArguments, '{"city": "Os')
  })
})

describe("OpenAI upstream → Anthropic client", () => {
  const reasoningThenTool = openAIChunks([
    { choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] },
    { choices: [{ index: 0, delta: { reasoning_content: "Think " }, finish_reason: null }] },
    { choices: [{ index: 0, delta: { reasoning_content: "hard." }, finish_reason: null }] },
    { choices: [{ index: 0, delta: { content: "Checking." }, finish_reason: null }] },
    {
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index: 0,
                id: "functions.get_weather:0",
                type: "function",
                function: { name: "get_weather", arguments: "" }
              }
            ]
          },
          finish_reason: null
        }
      ]
    },
    {
      choices: [
        { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, finish_reason: null }
      ]
    },
    {
      choices: [
        { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }, finish_reason: null }
      ]
    },
    { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    {
      choices: [],
      usage: {
        prompt_tokens: 90,
        completion_tokens: 30,
        total_tokens: 120,
        prompt_tokens_details: { cached_tokens: 10 },
        completion_tokens_details: { reasoning_tokens: 8 }
      }
    },
    { data: "[DONE]" }
  ]).map((e, i, all) => (i === all.length - 1 ? { data: "[DONE]" } : e))

  it("given reasoning, text and a tool call, then one message_start, blocks in order, synthetic signature, cumulative usage", () => {
    const { parsed, snapshot } = run(
      { upstream: "openai", client: "anthropic", clientModel: "claude-alias" },
      reasoningThenTool
    )
    assert.isTrue(
      parsed.every((f) => f.event === (f.data as { type: string }).type),
      "event name equals JSON type"
    )
    const toolId = sanitizeToolId("functions.get_weather:0")
    assert.deepStrictEqual(
      parsed.map((f) => f.data),
      [
        {
          type: "message_start",
          message: {
            id: "chatcmpl-1",
            type: "message",
            role: "assistant",
            model: "claude-alias",
            content: [],
            stop_reason: null,
            stop_sequence: null,
            usage: {
              input_tokens: 0,
              cache_creation_input_tokens: 0,
              cache_read_input_tokens: 0,
              cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
              output_tokens: 0
            }
          }
        },
        { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
        { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Think " } },
        { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "hard." } },
        {
          type: "content_block_delta",
          index: 0,
          delta: {
            type: "signature_delta",
            signature: (parsed[4].data as { delta: { signature: string } }).delta.signature
          }
        },
        { type: "content_block_stop", index: 0 },
        { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
        { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "Checking." } },
        { type: "content_block_stop", index: 1 },
        {
          type: "content_block_start",
          index: 2,
          content_block: { type: "tool_use", id: toolId, name: "get_weather", input: {} }
        },
        { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '{"city":' } },
        { type: "content_block_delta", index: 2, delta: { type: "input_json_delta", partial_json: '"Oslo"}' } },
        { type: "content_block_stop", index: 2 },
        {
          type: "message_delta",
          delta: { stop_reason: "tool_use", stop_sequence: null },
          usage: {
            input_tokens: 80,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 10,
            cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
            output_tokens: 30
          }
        },
        { type: "message_stop" }
      ]
    )
    assert.match((parsed[4].data as { delta: { signature: string } }).delta.signature, /^gw1\./)
    assert.strictEqual(snapshot.stopReason, "tool_use")
    assert.isFalse(snapshot.truncated)
  })

  it("given interleaved arguments for two calls, then each call becomes one contiguous tool block (the second buffered until the first is whole)", () => {
    const call = (index: number, id?: string, name?: string, args = "") => ({
      choices: [
        {
          index: 0,
          delta: {
            tool_calls: [
              {
                index,
                ...(id ? { id, type: "function" } : {}),
                function: { ...(name ? { name } : {}), arguments: args }
              }
            ]
          },
          finish_reason: null
        }
      ]
    })
    const { parsed } = run(
      { upstream: "openai", client: "anthropic" },
      openAIChunks([
        call(0, "call_a", "get_weather", '{"ci'),
        call(1, "call_b", "get_time", '{"tz'),
        call(0, undefined, undefined, 'ty":"Oslo"}'),
        call(1, undefined, undefined, '":"CET"}'),
        { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] }
      ])
    )
    const names = parsed.map((f) => f.event)
    assert.deepStrictEqual(names, [
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop"
    ])
    const json = (from: number, to: number) =>
      parsed
        .slice(from, to)
        .map((f) => (f.data as { delta: { partial_json: string } }).delta.partial_json)
        .join("")
    assert.deepStrictEqual(JSON.parse(json(2, 4)), { city: "Oslo" })
    assert.deepStrictEqual(JSON.parse(json(6, 8)), { tz: "CET" })
    assert.strictEqual((parsed[5].data as { content_block: { id: string } }).content_block.id, "call_b")
  })

  it("given whole calls in one chunk and a call without arguments, then blocks are sequential and empty input is {}", () => {
    const { parsed } = run(
      { upstream: "openai", client: "anthropic" },
      openAIChunks([
        {
          choices: [
            {
              index: 0,
              delta: {
                role: "assistant",
                tool_calls: [
                  { index: 0, id: "c1", type: "function", function: { name: "a", arguments: '{"x":1}' } },
                  { index: 1, id: "c2", type: "function", function: { name: "now" } }
                ]
              },
              finish_reason: "tool_calls"
            }
          ]
        }
      ])
    )
    assert.deepStrictEqual(
      parsed.slice(1, 7).map((f) => f.data),
      [
        { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: "c1", name: "a", input: {} } },
        { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: '{"x":1}' } },
        { type: "content_block_stop", index: 0 },
        {
          type: "content_block_start",
          index: 1,
          content_block: { type: "tool_use", id: "c2", name: "now", input: {} }
        },
        { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: "{}" } },
        { type: "content_block_stop", index: 1 }
      ]
    )
  })

  it("given upstream EOF after some text, then the block closes, the message ends, and delivered text is known", () => {
    const { parsed, snapshot } = run(
      { upstream: "openai", client: "anthropic" },
      openAIChunks([
        { choices: [{ index: 0, delta: { role: "assistant", content: "Hel" }, finish_reason: null }] },
        { choices: [{ index: 0, delta: { content: "lo" }, finish_reason: null }] }
      ])
    )
    assert.deepStrictEqual(
      parsed.map((f) => f.event),
      [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop"
      ]
    )
    assert.deepStrictEqual(snapshot.delivered.text, "Hello")
    assert.isTrue(snapshot.truncated)
    assert.strictEqual(snapshot.usage, undefined)
  })

  it("given an upstream error chunk, then the client gets event: error and nothing after", () => {
    const transducer = makeStreamTransducer({ ...base, upstream: "openai", client: "anthropic" })
    const frames = [
      ...openAIChunks([{ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] }]).flatMap((e) =>
        transducer.push(e)
      ),
      ...transducer.push({
        data: { error: { message: "Rate limit reached", type: "tokens", code: "rate_limit_exceeded" } }
      }),
      ...transducer.end()
    ]
    const parsed = readFrames(frames)
    assert.deepStrictEqual(parsed[parsed.length - 1], {
      event: "error",
      data: { type: "error", error: { type: "rate_limit_error", message: "Rate limit reached" } }
    })
    assert.isFalse(parsed.some((f) => f.event === "message_stop"))
  })

  it("given the HTTP layer reports a broken upstream, then fail() emits the in-band error once", () => {
    const transducer = makeStreamTransducer({ ...base, upstream: "openai", client: "anthropic" })
    transducer.push(openAIChunks([{ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] }])[0])
    const frames = transducer.fail("api_error", "upstream connection reset")
    assert.deepStrictEqual(frames, [
      'event: error\ndata: {"type":"error","error":{"type":"api_error","message":"upstream connection reset"}}\n\n'
    ])
    assert.deepStrictEqual(transducer.fail("api_error", "again"), [])
    assert.deepStrictEqual(transducer.end(), [])
  })
})

describe("input tokens for an Anthropic client of another vendor's model", () => {
  const usageOf = (parsed: ReadonlyArray<{ event?: string; data: unknown }>, name: string) =>
    (parsed.find((f) => f.event === name)?.data as { message?: { usage: unknown }; usage?: unknown }) ?? {}

  it("given the gateway's count, message_start carries it and message_delta the upstream's own at the end", () => {
    const { parsed } = run(
      { upstream: "openai", client: "anthropic", inputTokens: 37 },
      openAIChunks([
        { choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] },
        { choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
        { choices: [], usage: { prompt_tokens: 40, completion_tokens: 2, total_tokens: 42 } }
      ])
    )
    assert.deepInclude(usageOf(parsed, "message_start").message?.usage, { input_tokens: 37, output_tokens: 0 })
    assert.deepInclude(usageOf(parsed, "message_delta").usage, { input_tokens: 40, output_tokens: 2 })
  })

  it("given a stream cut before any usage, message_delta does not take the input count back to 0", () => {
    const { parsed } = run(
      { upstream: "openai", client: "anthropic", inputTokens: 37 },
      openAIChunks([{ choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] }]).slice(0, 1)
    )
    assert.deepInclude(usageOf(parsed, "message_delta").usage, { input_tokens: 37 })
  })
})

describe("Anthropic upstream → Anthropic client", () => {
  it("given a signed thinking block, then the genuine signature passes and no synthetic one is added", () => {
    const { parsed } = run({ upstream: "anthropic", client: "anthropic" }, anthropicToolStream)
    const signatures = parsed.flatMap((f) => {
      const delta = (f.data as { delta?: { type?: string; signature?: string } }).delta
      return delta?.type === "signature_delta" ? [delta.signature] : []
    })
    assert.deepStrictEqual(signatures, ["EqQB...opaque"])
    assert.strictEqual(parsed.filter((f) => f.event === "message_start").length, 1)
    assert.deepStrictEqual((parsed[parsed.length - 2].data as { usage: unknown }).usage, {
      input_tokens: 412,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 100,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: 95
    })
  })
})

describe("Gemini", () => {
  const geminiStream: ReadonlyArray<UpstreamEvent> = [
    {
      data: {
        candidates: [{ content: { role: "model", parts: [{ text: "Planning", thought: true }] }, index: 0 }],
        modelVersion: "gemini-2.5-flash",
        responseId: "resp-1"
      }
    },
    { data: { candidates: [{ content: { role: "model", parts: [{ text: "Sure." }] }, index: 0 }] } },
    {
      data: {
        candidates: [
          {
            content: { role: "model", parts: [{ functionCall: { name: "get_weather", args: { city: "Oslo" } } }] },
            finishReason: "STOP",
            index: 0
          }
        ],
        usageMetadata: { promptTokenCount: 50, candidatesTokenCount: 12, thoughtsTokenCount: 30, totalTokenCount: 92 }
      }
    }
  ]

  it("given a Gemini upstream, when the client is OpenAI, then thought, text, and a whole function call stream in order", () => {
    const { parsed, snapshot } = run({ upstream: "gemini", client: "openai", includeUsage: true }, geminiStream)
    assert.deepStrictEqual(chunkDeltas(parsed), [
      // Reasoning first: the role comes with it, and no empty text opens before it.
      {
        index: 0,
        delta: { role: "assistant", content: null, reasoning_content: "Planning" },
        logprobs: null,
        finish_reason: null
      },
      { index: 0, delta: { content: "Sure." }, logprobs: null, finish_reason: null },
      {
        index: 0,
        delta: {
          tool_calls: [{ index: 0, id: "call_0", type: "function", function: { name: "get_weather", arguments: "" } }]
        },
        logprobs: null,
        finish_reason: null
      },
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] },
        logprobs: null,
        finish_reason: null
      },
      { index: 0, delta: {}, logprobs: null, finish_reason: "tool_calls" },
      {
        usage: {
          prompt_tokens: 50,
          completion_tokens: 42,
          total_tokens: 92,
          prompt_tokens_details: { cached_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 30 }
        }
      },
      "[DONE]"
    ])
    assert.strictEqual((parsed[0].data as { id: string }).id, "chatcmpl-resp-1")
    assert.isFalse(snapshot.truncated)
  })

  it("given an OpenAI upstream, when the client is Gemini, then data-only chunks end with finishReason and usage", () => {
    const { frames, parsed } = run(
      { upstream: "openai", client: "gemini" },
      openAIChunks([
        { choices: [{ index: 0, delta: { role: "assistant", content: "Hi" }, finish_reason: null }] },
        {
          choices: [
            {
              index: 0,
              delta: {
                tool_calls: [{ index: 0, id: "c1", type: "function", function: { name: "f", arguments: '{"a":' } }]
              },
              finish_reason: null
            }
          ]
        },
        {
          choices: [
            { index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "1}" } }] }, finish_reason: null }
          ]
        },
        { choices: [{ index: 0, delta: {}, finish_reason: "length" }] },
        { choices: [], usage: { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 } }
      ])
    )
    assert.isTrue(frames.every((f) => f.startsWith("data: ") && f.endsWith("\n\n")))
    assert.deepStrictEqual(
      parsed.map((f) => (f.data as { candidates: Array<unknown> }).candidates[0]),
      [
        { content: { role: "model", parts: [{ text: "Hi" }] }, index: 0 },
        { content: { role: "model", parts: [{ functionCall: { id: "c1", name: "f", args: { a: 1 } } }] }, index: 0 },
        { content: { role: "model", parts: [] }, finishReason: "MAX_TOKENS", index: 0 }
      ]
    )
    assert.deepStrictEqual((parsed[2].data as { usageMetadata: unknown }).usageMetadata, {
      promptTokenCount: 5,
      candidatesTokenCount: 6,
      totalTokenCount: 11
    })
  })

  it("given a Gemini error chunk, when the client is Anthropic, then event: error carries the mapped type", () => {
    const { parsed } = run({ upstream: "gemini", client: "anthropic" }, [
      { data: { error: { code: 429, message: "Resource exhausted", status: "RESOURCE_EXHAUSTED" } } }
    ])
    assert.deepStrictEqual(parsed, [
      { event: "error", data: { type: "error", error: { type: "rate_limit_error", message: "Resource exhausted" } } }
    ])
  })
})
