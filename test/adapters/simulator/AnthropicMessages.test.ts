import Anthropic from "@anthropic-ai/sdk"
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { countAnthropicMessages } from "../../../src/adapters/tokenizer/ChatTally.ts"
import { assertMatchesSchema } from "./SchemaCheck.ts"

type AnthropicError = InstanceType<typeof Anthropic.APIError>

const weatherTool: Anthropic.Tool = {
  name: "get_weather",
  description: "Current weather for a city",
  input_schema: {
    type: "object",
    properties: { city: { type: "string" }, days: { type: "integer", minimum: 1, maximum: 7 } },
    required: ["city", "days"]
  }
}

const clientFor = (simulator: Simulator["Service"], apiKey = simulator.apiKey) =>
  new Anthropic({ apiKey, baseURL: simulator.baseUrl, maxRetries: 0 })

const failure = <A>(promise: Promise<A>) =>
  Effect.promise(() =>
    promise.then(
      () => undefined,
      (error: unknown) => error
    )
  )

const outputTokens = (content: ReadonlyArray<Anthropic.ContentBlock>): number =>
  content.reduce((sum, block) => {
    if (block.type === "text") return sum + countText(block.text)
    if (block.type === "thinking") return sum + countText(block.thinking)
    if (block.type === "tool_use") return sum + countText(block.name) + countText(JSON.stringify(block.input))
    return sum
  }, 0)

layer(Simulator.layer)("simulator speaks Anthropic Messages to the official SDK", (it) => {
  it.effect("plain message with real usage; count_tokens agrees with input_tokens", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const request = {
        model: "claude-sim",
        max_tokens: 256,
        system: "You are terse.",
        messages: [{ role: "user" as const, content: "Hello from the Anthropic SDK" }]
      }
      const message = yield* Effect.promise(() => client.messages.create(request))
      const again = yield* Effect.promise(() => client.messages.create(request))
      const block = message.content[0]!
      assert.strictEqual(block.type, "text")
      if (block.type !== "text") return
      assert.isTrue(block.text.startsWith("Echo: Hello from the Anthropic SDK"))
      assert.deepStrictEqual(again.content, message.content)
      assert.strictEqual(message.model, "claude-sim")
      assert.strictEqual(message.stop_reason, "end_turn")
      assert.strictEqual(message.usage.output_tokens, countText(block.text))
      assert.strictEqual(message.usage.input_tokens, countAnthropicMessages(request))
      const counted = yield* Effect.promise(() =>
        client.messages.countTokens({ model: request.model, system: request.system, messages: request.messages })
      )
      assert.strictEqual(counted.input_tokens, message.usage.input_tokens)
    })
  )

  it.effect("streams the full event sequence and the SDK assembles the same message", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const request = {
        model: "claude-sim",
        max_tokens: 256,
        messages: [{ role: "user" as const, content: "Stream please" }]
      }
      const { events, final } = yield* Effect.promise(async () => {
        const stream = client.messages.stream(request)
        const names: Array<string> = []
        stream.on("streamEvent", (event) => names.push(event.type))
        const final = await stream.finalMessage()
        return { events: names, final }
      })
      const plain = yield* Effect.promise(() => client.messages.create(request))
      assert.deepStrictEqual(
        final.content.map((block) => (block.type === "text" ? block.text : block.type)),
        plain.content.map((block) => (block.type === "text" ? block.text : block.type))
      )
      assert.strictEqual(events[0], "message_start")
      assert.strictEqual(events[1], "content_block_start")
      assert.deepStrictEqual(events.slice(-3), ["content_block_stop", "message_delta", "message_stop"])
      assert.strictEqual(final.usage.output_tokens, plain.usage.output_tokens)
      assert.strictEqual(final.usage.input_tokens, plain.usage.input_tokens)
      assert.strictEqual(final.stop_reason, "end_turn")
    })
  )

  it.effect("tools: tool_use with schema-shaped input, then text quoting the tool_result", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const question: Anthropic.MessageParam = { role: "user", content: "Please call the weather tool for Oslo" }
      const first = yield* Effect.promise(() =>
        client.messages.create({ model: "claude-sim", max_tokens: 256, tools: [weatherTool], messages: [question] })
      )
      assert.strictEqual(first.stop_reason, "tool_use")
      const use = first.content.find((block) => block.type === "tool_use")!
      assert.strictEqual(use.type, "tool_use")
      if (use.type !== "tool_use") return
      assert.match(use.id, /^toolu_[a-zA-Z0-9_-]+$/)
      assertMatchesSchema(weatherTool.input_schema, use.input)
      assert.strictEqual((use.input as { city: string }).city, "Paris")
      assert.strictEqual(first.usage.output_tokens, outputTokens(first.content))

      const second = yield* Effect.promise(() =>
        client.messages.create({
          model: "claude-sim",
          max_tokens: 256,
          tools: [weatherTool],
          messages: [
            question,
            { role: "assistant", content: first.content },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Sunny, 18 degrees" }] }
          ]
        })
      )
      const text = second.content[0]!
      assert.strictEqual(second.stop_reason, "end_turn")
      assert.isTrue(text.type === "text" && text.text.includes("Sunny, 18 degrees"))
    })
  )

  it.effect("validates the conversation like the API: tool ids, orphan tool_result, max_tokens", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const badId = yield* failure(
        client.messages.create({
          model: "m",
          max_tokens: 64,
          messages: [
            { role: "user", content: "hi" },
            {
              role: "assistant",
              content: [{ type: "tool_use", id: "functions.get_weather:0", name: "get_weather", input: {} }]
            },
            { role: "user", content: [{ type: "tool_result", tool_use_id: "functions.get_weather:0", content: "x" }] }
          ]
        })
      )
      assert.instanceOf(badId, Anthropic.BadRequestError)
      assert.include((badId as AnthropicError).message, "String should match pattern")

      const orphan = yield* failure(
        client.messages.create({
          model: "m",
          max_tokens: 64,
          messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "x" }] }]
        })
      )
      assert.instanceOf(orphan, Anthropic.BadRequestError)
      assert.include((orphan as AnthropicError).message, "tool_result")

      const noMax = yield* failure(
        client.messages.create({
          model: "m",
          messages: [{ role: "user", content: "x" }]
        } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      )
      assert.instanceOf(noMax, Anthropic.BadRequestError)
      const body = (noMax as AnthropicError).error as { type: string; error: { type: string; message: string } }
      assert.strictEqual(body.type, "error")
      assert.deepStrictEqual(body.error, { type: "invalid_request_error", message: "max_tokens: Field required" })

      const wrongKey = yield* failure(
        clientFor(yield* Simulator, "wrong").messages.create({
          model: "m",
          max_tokens: 8,
          messages: [{ role: "user", content: "x" }]
        })
      )
      assert.instanceOf(wrongKey, Anthropic.AuthenticationError)
    })
  )

  it.effect("thinking: signed thinking block, verified when sent back in the tool loop", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const base = {
        model: "claude-sim",
        max_tokens: 4096,
        thinking: { type: "enabled" as const, budget_tokens: 2048 },
        tools: [weatherTool]
      }
      const question: Anthropic.MessageParam = { role: "user", content: "Use get_weather for Paris" }
      const first = yield* Effect.promise(() =>
        client.messages.stream({ ...base, messages: [question] }).finalMessage()
      )
      const thinking = first.content[0]!
      assert.strictEqual(thinking.type, "thinking")
      if (thinking.type !== "thinking") return
      assert.isAbove(thinking.signature.length, 10)
      assert.isAbove(first.usage.output_tokens, countText(thinking.thinking))
      assert.strictEqual(first.usage.output_tokens, outputTokens(first.content))
      const use = first.content.find((block) => block.type === "tool_use")!
      if (use.type !== "tool_use") return assert.fail("expected a tool_use block")

      const followUp = (content: ReadonlyArray<Anthropic.ContentBlockParam>) =>
        client.messages.create({
          ...base,
          messages: [
            question,
            { role: "assistant", content: [...content] },
            { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: "Rain" }] }
          ]
        })

      const second = yield* Effect.promise(() => followUp(first.content as ReadonlyArray<Anthropic.ContentBlockParam>))
      assert.strictEqual(second.content[0]!.type, "thinking")
      const answer = second.content.find((block) => block.type === "text")
      assert.isTrue(answer?.type === "text" && answer.text.includes("Rain"))

      const tampered = yield* failure(
        followUp([{ ...thinking, signature: `${thinking.signature.slice(0, -4)}AAA=` }, use])
      )
      assert.instanceOf(tampered, Anthropic.BadRequestError)
      assert.include((tampered as AnthropicError).message, "Invalid `signature` in `thinking` block")

      const edited = yield* failure(followUp([{ ...thinking, thinking: `${thinking.thinking} (edited)` }, use]))
      assert.instanceOf(edited, Anthropic.BadRequestError)

      const dropped = yield* failure(followUp([use]))
      assert.instanceOf(dropped, Anthropic.BadRequestError)
      assert.include((dropped as AnthropicError).message, "Expected `thinking` or `redacted_thinking`")

      const forced = yield* failure(
        client.messages.create({ ...base, tool_choice: { type: "any" }, messages: [question] })
      )
      assert.instanceOf(forced, Anthropic.BadRequestError)
    })
  )

  it.effect("lists models in Anthropic's shape", () =>
    Effect.gen(function* () {
      const client = clientFor(yield* Simulator)
      const page = yield* Effect.promise(() => client.models.list())
      assert.isTrue(page.data.some((model) => model.id === "claude-opus-4-1" && model.type === "model"))
    })
  )
})
