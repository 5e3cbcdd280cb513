import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { countOpenAIChat } from "../../../src/adapters/tokenizer/ChatTally.ts"
import { assertMatchesSchema } from "./SchemaCheck.ts"

const weatherTool = {
  type: "function" as const,
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: {
      type: "object",
      properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city", "unit"]
    }
  }
}

const clientFor = (simulator: Simulator["Service"], apiKey = simulator.apiKey) =>
  new OpenAI({ apiKey, baseURL: `${simulator.baseUrl}/v1`, maxRetries: 0 })

layer(Simulator.layer)("simulator speaks OpenAI chat completions to the official SDK", (it) => {
  it.effect("plain completion with real usage, deterministic", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const messages = [{ role: "user" as const, content: "Tell me about the simulator please" }]
      const first = yield* Effect.promise(() => client.chat.completions.create({ model: "gpt-4o-mini", messages }))
      const second = yield* Effect.promise(() => client.chat.completions.create({ model: "gpt-4o-mini", messages }))
      const text = first.choices[0]!.message.content!
      assert.strictEqual(first.model, "gpt-4o-mini")
      assert.isTrue(text.startsWith("Echo: Tell me about the simulator please"))
      assert.strictEqual(second.choices[0]!.message.content, text)
      assert.notStrictEqual(first.id, second.id)
      assert.strictEqual(first.choices[0]!.finish_reason, "stop")
      assert.strictEqual(first.usage!.prompt_tokens, countOpenAIChat({ messages }))
      assert.strictEqual(first.usage!.completion_tokens, countText(text))
      assert.strictEqual(first.usage!.total_tokens, first.usage!.prompt_tokens + first.usage!.completion_tokens)
    })
  )

  it.effect("max_completion_tokens bounds the reply and gives finish_reason length", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const reply = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "gpt-4o-mini",
          max_completion_tokens: 5,
          messages: [{ role: "user", content: "a long question that would need a long answer" }]
        })
      )
      assert.strictEqual(reply.choices[0]!.finish_reason, "length")
      assert.strictEqual(reply.usage!.completion_tokens, 5)
      assert.strictEqual(countText(reply.choices[0]!.message.content!), 5)
    })
  )

  it.effect("streams chunks, a usage chunk with empty choices, then [DONE]", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const messages = [{ role: "user" as const, content: "Stream this to me" }]
      const result = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({
          model: "gpt-4o-mini",
          messages,
          stream: true,
          stream_options: { include_usage: true }
        })
        const chunks: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
        for await (const chunk of stream) chunks.push(chunk)
        return chunks
      })
      const text = result.flatMap((chunk) => chunk.choices.map((choice) => choice.delta.content ?? "")).join("")
      const last = result[result.length - 1]!
      assert.isAbove(result.length, 4)
      assert.isTrue(text.startsWith("Echo: Stream this to me"))
      assert.deepStrictEqual(last.choices, [])
      assert.strictEqual(last.usage!.completion_tokens, countText(text))
      assert.strictEqual(last.usage!.prompt_tokens, countOpenAIChat({ messages }))
      assert.strictEqual(result[result.length - 2]!.choices[0]!.finish_reason, "stop")
      assert.isTrue(result.slice(0, -1).every((chunk) => chunk.usage === null))
    })
  )

  it.effect("tools: a call with schema-shaped arguments, then text quoting the tool result", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const question = { role: "user" as const, content: "What is the weather in Paris? Use get_weather." }
      const first = yield* Effect.promise(() =>
        client.chat.completions.create({ model: "gpt-4o-mini", messages: [question], tools: [weatherTool] })
      )
      const choice = first.choices[0]!
      assert.strictEqual(choice.finish_reason, "tool_calls")
      assert.isNull(choice.message.content)
      const call = choice.message.tool_calls![0]!
      assert.strictEqual(call.type, "function")
      if (call.type !== "function") return
      assert.strictEqual(call.function.name, "get_weather")
      const parsed = JSON.parse(call.function.arguments)
      assertMatchesSchema(weatherTool.function.parameters, parsed)
      assert.strictEqual(parsed.city, "Paris")

      const second = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "gpt-4o-mini",
          tools: [weatherTool],
          messages: [
            question,
            choice.message,
            { role: "tool", tool_call_id: call.id, content: '{"temperature":21,"sky":"clear"}' }
          ]
        })
      )
      assert.strictEqual(second.choices[0]!.finish_reason, "stop")
      assert.include(second.choices[0]!.message.content!, '{"temperature":21,"sky":"clear"}')
    })
  )

  it.effect("tools: streamed call arguments concatenate to JSON; named tool_choice finishes with stop", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const chunks = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "hello" }],
          tools: [weatherTool],
          tool_choice: { type: "function", function: { name: "get_weather" } },
          stream: true
        })
        const all: Array<OpenAI.Chat.Completions.ChatCompletionChunk> = []
        for await (const chunk of stream) all.push(chunk)
        return all
      })
      const calls = chunks.flatMap((chunk) => chunk.choices.flatMap((c) => c.delta.tool_calls ?? []))
      assert.strictEqual(calls[0]!.function!.name, "get_weather")
      const args = calls.map((c) => c.function?.arguments ?? "").join("")
      assertMatchesSchema(weatherTool.function.parameters, JSON.parse(args))
      assert.strictEqual(chunks[chunks.length - 1]!.choices[0]!.finish_reason, "stop")
    })
  )

  it.effect("reasoning_effort adds reasoning_content and reasoning tokens", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const reply = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "gpt-5",
          reasoning_effort: "low",
          messages: [{ role: "user", content: "Think about this" }]
        })
      )
      const message = reply.choices[0]!.message as (typeof reply.choices)[0]["message"] & { reasoning_content?: string }
      assert.isString(message.reasoning_content)
      const reasoning = countText(message.reasoning_content!)
      assert.strictEqual(reply.usage!.completion_tokens_details!.reasoning_tokens, reasoning)
      assert.strictEqual(reply.usage!.completion_tokens, reasoning + countText(message.content!))

      const deltas = yield* Effect.promise(async () => {
        const stream = await client.chat.completions.create({
          model: "gpt-5",
          reasoning_effort: "low",
          stream: true,
          messages: [{ role: "user", content: "Think about this" }]
        })
        let text = ""
        for await (const chunk of stream) {
          const delta = chunk.choices[0]?.delta as { reasoning_content?: string } | undefined
          text += delta?.reasoning_content ?? ""
        }
        return text
      })
      assert.strictEqual(deltas, message.reasoning_content)
    })
  )

  it.effect("rejects a wrong key with 401 and bad requests with 400 in OpenAI's envelope", () =>
    Effect.gen(function* () {
      const simulator = yield* Simulator
      const wrong = yield* Effect.promise(() =>
        clientFor(simulator, "sk-wrong-key-123456")
          .chat.completions.create({ model: "m", messages: [{ role: "user", content: "x" }] })
          .catch((error: unknown) => error)
      )
      assert.instanceOf(wrong, OpenAI.AuthenticationError)
      assert.strictEqual((wrong as InstanceType<typeof OpenAI.APIError>).code, "invalid_api_key")

      const client = clientFor(simulator)
      const missing = yield* Effect.promise(() =>
        client.chat.completions
          .create({ model: "m" } as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming)
          .catch((error: unknown) => error)
      )
      assert.instanceOf(missing, OpenAI.BadRequestError)
      assert.strictEqual((missing as InstanceType<typeof OpenAI.APIError>).param, "messages")

      const orphan = yield* Effect.promise(() =>
        client.chat.completions
          .create({ model: "m", messages: [{ role: "tool", tool_call_id: "call_1", content: "x" }] })
          .catch((error: unknown) => error)
      )
      assert.instanceOf(orphan, OpenAI.BadRequestError)
    })
  )

  it.effect("lists models", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const page = yield* Effect.promise(() => client.models.list())
      assert.isTrue(page.data.some((model) => model.id === "gpt-4o-mini"))
    })
  )
})
