/**
 * The simulator's replies field by field against what each vendor sends: clients parse them with strict schemas
 * (`@ai-sdk/anthropic` refuses `citations: null`, which the real API never sends), so an extra or null field the
 * vendor omits breaks them. OpenAI's are checked against its published OpenAPI document.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { assertOpenAiSchema } from "../../support/OpenAiSchema.ts"

// biome-ignore lint/suspicious/noExplicitAny: wire JSON read loosely in assertions
type Wire = any

const post = (url: string, headers: Record<string, string>, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
    return { status: response.status, text: await response.text() }
  })

/** `[event name, data]` of each SSE event (the name is undefined when the event has none). */
const sseEvents = (sse: string): Array<[string | undefined, Wire]> =>
  sse
    .split("\n\n")
    .filter((block) => block.includes("data: ") && !block.includes("data: [DONE]"))
    .map((block) => {
      const name = /^event: (.*)$/m.exec(block)?.[1]
      const data = /^data: (.*)$/m.exec(block)![1]!
      return [name, JSON.parse(data)]
    })

const keys = (value: Wire): Array<string> => Object.keys(value).sort()

const tool = {
  name: "get_weather",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

const ANTHROPIC_USAGE = [
  "cache_creation",
  "cache_creation_input_tokens",
  "cache_read_input_tokens",
  "input_tokens",
  "output_tokens",
  "service_tier"
]
const MESSAGE_KEYS = ["content", "id", "model", "role", "stop_reason", "stop_sequence", "type", "usage"]

layer(Simulator.layer)("simulator reply shapes", (it) => {
  const anthropic = (sim: Simulator["Service"], body: unknown) =>
    post(`${sim.baseUrl}/v1/messages`, { "x-api-key": sim.apiKey, "anthropic-version": "2023-06-01" }, body)

  it.effect(
    "Anthropic message: text blocks carry type and text only, no citations: null; usage as the API sends it",
    () =>
      Effect.gen(function* () {
        const sim = yield* Simulator
        const reply = yield* anthropic(sim, {
          model: "claude-sonnet-4-5",
          max_tokens: 64,
          messages: [{ role: "user", content: "Hello" }]
        })
        const message = JSON.parse(reply.text)
        assert.deepStrictEqual(keys(message), MESSAGE_KEYS)
        assert.deepStrictEqual(keys(message.content[0]), ["text", "type"])
        assert.deepStrictEqual(keys(message.usage), ANTHROPIC_USAGE)
        assert.deepStrictEqual(message.usage.cache_creation, {
          ephemeral_1h_input_tokens: 0,
          ephemeral_5m_input_tokens: 0
        })
        assert.strictEqual(message.usage.service_tier, "standard")
      })
  )

  it.effect("Anthropic thinking and tool_use blocks have exactly the API's fields", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* anthropic(sim, {
        model: "claude-sonnet-4-5",
        max_tokens: 4096,
        thinking: { type: "enabled", budget_tokens: 1024 },
        tools: [tool],
        messages: [{ role: "user", content: "Use get_weather for Paris" }]
      })
      const [thinking, use] = JSON.parse(reply.text).content
      assert.deepStrictEqual(keys(thinking), ["signature", "thinking", "type"])
      assert.deepStrictEqual(keys(use), ["id", "input", "name", "type"])
    })
  )

  it.effect("Anthropic stream: every event is named after its type and shaped as the API's", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* anthropic(sim, {
        model: "claude-sonnet-4-5",
        max_tokens: 64,
        stream: true,
        messages: [{ role: "user", content: "Hello" }]
      })
      const events = sseEvents(reply.text)
      for (const [name, data] of events) assert.strictEqual(name, data.type)
      const types = events.map(([, data]) => data.type as string)
      assert.deepStrictEqual(
        [...new Set(types)],
        [
          "message_start",
          "ping",
          "content_block_start",
          "content_block_delta",
          "content_block_stop",
          "message_delta",
          "message_stop"
        ]
      )
      const start = events[0]![1].message
      assert.deepStrictEqual(keys(start), MESSAGE_KEYS)
      assert.deepStrictEqual(start.content, [])
      assert.isNull(start.stop_reason)
      assert.deepStrictEqual(keys(start.usage), ANTHROPIC_USAGE)
      const blockStart = events.find(([, data]) => data.type === "content_block_start")![1]
      assert.deepStrictEqual(blockStart, {
        type: "content_block_start",
        index: 0,
        content_block: { type: "text", text: "" }
      })
      for (const [, data] of events.filter(([, d]) => d.type === "content_block_delta")) {
        assert.deepStrictEqual(keys(data), ["delta", "index", "type"])
        assert.deepStrictEqual(keys(data.delta), ["text", "type"])
      }
      const delta = events.find(([, data]) => data.type === "message_delta")![1]
      assert.deepStrictEqual(keys(delta), ["delta", "type", "usage"])
      assert.deepStrictEqual(keys(delta.delta), ["stop_reason", "stop_sequence"])
      assert.deepStrictEqual(keys(delta.usage), [
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "input_tokens",
        "output_tokens"
      ])
      assert.deepStrictEqual(events.at(-1)![1], { type: "message_stop" })
    })
  )

  it.effect("OpenAI chat completions, plain, tool call, JSON and streamed, conform to the OpenAPI document", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const openai = (body: unknown) =>
        post(`${sim.baseUrl}/v1/chat/completions`, { authorization: `Bearer ${sim.apiKey}` }, body)
      const base = { model: "gpt-4o-mini", messages: [{ role: "user", content: "Hello, reply in json" }] }
      const variants = [
        base,
        {
          ...base,
          tools: [{ type: "function", function: { name: tool.name, parameters: tool.input_schema } }],
          tool_choice: "required"
        },
        { ...base, response_format: { type: "json_object" } }
      ]
      for (const variant of variants) {
        const reply = yield* openai(variant)
        assertOpenAiSchema("CreateChatCompletionResponse", JSON.parse(reply.text))
        const streamed = yield* openai({ ...variant, stream: true, stream_options: { include_usage: true } })
        for (const [name, chunk] of sseEvents(streamed.text)) {
          assert.isUndefined(name)
          assertOpenAiSchema("CreateChatCompletionStreamResponse", chunk)
        }
      }
    })
  )

  it.effect("Gemini: the response's fields, with usage in full on the last chunk only", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const gemini = (method: string, body: unknown) =>
        post(`${sim.baseUrl}/v1beta/models/gemini-2.5-flash:${method}`, { "x-goog-api-key": sim.apiKey }, body)
      const request = { contents: [{ role: "user", parts: [{ text: "Hello" }] }] }
      const reply = JSON.parse((yield* gemini("generateContent", request)).text)
      assert.deepStrictEqual(keys(reply), ["candidates", "modelVersion", "responseId", "usageMetadata"])
      assert.deepStrictEqual(keys(reply.candidates[0]), ["content", "finishReason", "index"])
      assert.deepStrictEqual(keys(reply.candidates[0].content), ["parts", "role"])
      assert.deepStrictEqual(keys(reply.usageMetadata), [
        "candidatesTokenCount",
        "promptTokenCount",
        "promptTokensDetails",
        "totalTokenCount"
      ])
      assert.strictEqual(reply.modelVersion, "gemini-2.5-flash")
      assert.match(reply.responseId, /^[A-Za-z0-9_-]+$/)

      const stream = yield* post(
        `${sim.baseUrl}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`,
        { "x-goog-api-key": sim.apiKey },
        request
      )
      const chunks = sseEvents(stream.text).map(([, data]) => data)
      assert.isAbove(chunks.length, 1)
      for (const chunk of chunks.slice(0, -1)) {
        assert.isUndefined(chunk.candidates[0].finishReason)
        assert.strictEqual(chunk.responseId, chunks[0].responseId)
      }
      assert.strictEqual(chunks.at(-1).candidates[0].finishReason, "STOP")
      assert.deepStrictEqual(keys(chunks.at(-1).usageMetadata), keys(reply.usageMetadata))
    })
  )
})
