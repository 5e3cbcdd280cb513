/**
 * The transducers' output read by the official SDKs, through an injected `fetch` (no socket): the strongest check that
 * the frames are what real clients accept.
 */
import Anthropic from "@anthropic-ai/sdk"
import { assert, describe, it } from "@effect/vitest"
import { GoogleGenAI } from "@google/genai"
import { vi } from "vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import type { UpstreamEvent } from "../../../../src/plugins/text/convert/ChatStream.ts"
import {
  makeStreamTransducer,
  type StreamTransducerOptions
} from "../../../../src/plugins/text/convert/StreamTransducer.ts"
import { sanitizeToolId } from "../../../../src/plugins/text/convert/toolId.ts"
import { anthropicEvents, openAIChunks } from "./helpers.ts"

const sseFetch =
  (frames: ReadonlyArray<string>): typeof fetch =>
  () =>
    Promise.resolve(new Response(frames.join(""), { status: 200, headers: { "content-type": "text/event-stream" } }))

const translate = (
  options: Pick<StreamTransducerOptions, "upstream" | "client" | "includeUsage">,
  events: ReadonlyArray<UpstreamEvent>
) => {
  const transducer = makeStreamTransducer({ ...options, created: 1760000000, fallbackId: "gw-1", fallbackModel: "m" })
  return [...events.flatMap((e) => transducer.push(e)), ...transducer.end()]
}

const openAIToolStream = openAIChunks([
  {
    choices: [{ index: 0, delta: { role: "assistant", reasoning_content: "Thinking it over." }, finish_reason: null }]
  },
  { choices: [{ index: 0, delta: { content: "Checking the weather." }, finish_reason: null }] },
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
      {
        index: 0,
        delta: { tool_calls: [{ index: 0, function: { arguments: '{"city":"Oslo"}' } }] },
        finish_reason: null
      }
    ]
  },
  { choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] },
  { choices: [], usage: { prompt_tokens: 30, completion_tokens: 12, total_tokens: 42 } }
])

const anthropicStream = anthropicEvents([
  {
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude",
      content: [],
      usage: { input_tokens: 20, output_tokens: 1 }
    }
  },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi there" } },
  { type: "content_block_stop", index: 0 },
  { type: "content_block_start", index: 1, content_block: { type: "tool_use", id: "toolu_1", name: "now", input: {} } },
  { type: "content_block_stop", index: 1 },
  { type: "message_delta", delta: { stop_reason: "tool_use", stop_sequence: null }, usage: { output_tokens: 7 } },
  { type: "message_stop" }
])

describe("official SDKs read the translated streams", () => {
  it.effect(
    "given an OpenAI upstream, when @anthropic-ai/sdk reads the stream, then finalMessage has every block",
    () =>
      Effect.gen(function* () {
        const client = new Anthropic({
          apiKey: "sk-test",
          fetch: sseFetch(translate({ upstream: "openai", client: "anthropic" }, openAIToolStream))
        })
        const message = yield* Effect.promise(() =>
          client.messages
            .stream({ model: "claude", max_tokens: 100, messages: [{ role: "user", content: "Weather?" }] })
            .finalMessage()
        )
        assert.deepStrictEqual(
          message.content.map((b) => b.type),
          ["thinking", "text", "tool_use"]
        )
        const [thinking, text, tool] = message.content
        assert.strictEqual(thinking.type === "thinking" && thinking.thinking, "Thinking it over.")
        assert.match(thinking.type === "thinking" ? thinking.signature : "", /^gw1\./)
        assert.strictEqual(text.type === "text" && text.text, "Checking the weather.")
        assert.deepStrictEqual(tool.type === "tool_use" && tool.input, { city: "Oslo" })
        assert.strictEqual(tool.type === "tool_use" && tool.id, sanitizeToolId("functions.get_weather:0"))
        assert.strictEqual(message.stop_reason, "tool_use")
        assert.strictEqual(message.usage.input_tokens, 30)
        assert.strictEqual(message.usage.output_tokens, 12)
      })
  )

  it.effect(
    "given an Anthropic upstream, when openai-node reads the stream, then the final completion has the call and usage",
    () =>
      Effect.gen(function* () {
        const client = new OpenAI({
          apiKey: "sk-test",
          fetch: sseFetch(translate({ upstream: "anthropic", client: "openai", includeUsage: true }, anthropicStream))
        })
        const completion = yield* Effect.promise(() =>
          client.chat.completions
            .stream({
              model: "m",
              messages: [{ role: "user", content: "hi" }],
              stream_options: { include_usage: true }
            })
            .finalChatCompletion()
        )
        const choice = completion.choices[0]
        assert.strictEqual(choice.message.content, "Hi there")
        assert.strictEqual(choice.finish_reason, "tool_calls")
        const call = choice.message.tool_calls?.[0]
        assert.deepStrictEqual(
          call?.type === "function" ? [call.id, call.function.name, call.function.arguments] : [],
          ["toolu_1", "now", "{}"]
        )
        assert.deepStrictEqual(
          completion.usage && [completion.usage.prompt_tokens, completion.usage.completion_tokens],
          [20, 7]
        )
      })
  )

  it.effect("given an upstream error mid-stream, when openai-node reads it, then the SDK raises the error", () =>
    Effect.gen(function* () {
      const frames = translate({ upstream: "anthropic", client: "openai" }, [
        ...anthropicStream.slice(0, 3),
        { event: "error", data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } }
      ])
      const client = new OpenAI({ apiKey: "sk-test", fetch: sseFetch(frames) })
      const outcome = yield* Effect.promise(() =>
        client.chat.completions
          .stream({ model: "m", messages: [{ role: "user", content: "hi" }] })
          .finalChatCompletion()
          .then(
            () => "completed",
            (e: unknown) => (e instanceof Error ? e.message : "failed")
          )
      )
      assert.match(outcome, /Overloaded/)
    })
  )

  it.effect("given an OpenAI upstream, when @google/genai reads the stream, then text, call and usage arrive", () =>
    Effect.gen(function* () {
      // js-genai has no fetch option; the global is swapped for this test only.
      vi.stubGlobal("fetch", sseFetch(translate({ upstream: "openai", client: "gemini" }, openAIToolStream)))
      const ai = new GoogleGenAI({ apiKey: "test-key" })
      const chunks = yield* Effect.promise(async () => {
        const out = []
        for await (const chunk of await ai.models.generateContentStream({
          model: "gemini-2.5-flash",
          contents: "hi"
        })) {
          out.push(chunk)
        }
        return out
      }).pipe(Effect.ensuring(Effect.sync(() => vi.unstubAllGlobals())))
      const texts = chunks.map((c) => c.text ?? "").join("")
      assert.strictEqual(texts, "Checking the weather.")
      const calls = chunks.flatMap((c) => c.functionCalls ?? [])
      assert.deepStrictEqual(
        calls.map((c) => [c.id, c.name, c.args]),
        [["functions.get_weather:0", "get_weather", { city: "Oslo" }]]
      )
      const last = chunks[chunks.length - 1]
      assert.strictEqual(last.candidates?.[0]?.finishReason, "STOP")
      assert.strictEqual(last.usageMetadata?.promptTokenCount, 30)
    })
  )
})
