/**
 * LangChain JS (`@langchain/openai` ChatOpenAI on chat-completions, `@langchain/anthropic` ChatAnthropic on messages)
 * against the real gateway on its built-in simulator, for every default text model: invoke, stream with usage
 * metadata, tools (bindTools → tool_calls → ToolMessage → answer) and withStructuredOutput; every request charged
 * exactly the usage_metadata LangChain reported.
 */
import { ChatAnthropic } from "@langchain/anthropic"
import type { BaseChatModel } from "@langchain/core/language_models/chat_models"
import { type AIMessage, type AIMessageChunk, HumanMessage, ToolMessage } from "@langchain/core/messages"
import { ChatOpenAI } from "@langchain/openai"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { z } from "zod"
import type { Expected } from "../http/chat/Billing.ts"
import { assertEcho, HELLO, TOOL_RESULT, WEATHER_PROMPT } from "../http/chat/Fixtures.ts"
import {
  assertChargedAsSeen,
  billedFrom,
  type ClientGateway,
  closeClientGateway,
  startClientGateway,
  TEXT_MODELS
} from "./ClientGateway.ts"

let h: ClientGateway
beforeAll(async () => {
  h = await startClientGateway()
}, 60_000)
afterAll(() => closeClientGateway(h))

const PROTOCOLS: Record<string, (key: string, model: string) => ChatOpenAI | ChatAnthropic> = {
  "ChatOpenAI chat-completions": (key, model) =>
    new ChatOpenAI({
      model,
      apiKey: key,
      configuration: { baseURL: `${h.gateway.url}/v1`, fetch: h.fetch },
      useResponsesApi: false,
      streamUsage: true,
      maxRetries: 0
    }),
  "ChatAnthropic messages": (key, model) =>
    new ChatAnthropic({
      model,
      apiKey: key,
      anthropicApiUrl: h.gateway.url,
      clientOptions: { fetch: h.fetch },
      streamUsage: true,
      maxRetries: 0
    })
}

const CASES = Object.keys(PROTOCOLS).flatMap((protocol) => TEXT_MODELS.map((model) => [protocol, model] as const))

const tokensOf = (message: AIMessage | AIMessageChunk | undefined) => {
  const usage = message?.usage_metadata
  assert.isDefined(usage, "usage_metadata")
  return { input: usage?.input_tokens ?? -1, output: usage?.output_tokens ?? -1 }
}

const weatherTool = {
  name: "get_weather",
  description: "The current weather in a city",
  schema: z.object({ city: z.string() })
}

describe.each(CASES)("LangChain %s → %s", (protocol, modelId) => {
  const chatFor = (key: string) => PROTOCOLS[protocol](key, modelId)

  it("invoke and stream answer the same text, with usage_metadata the ledger charged", async () => {
    const customer = await h.admin.customer()
    const chat = chatFor(customer.key)
    const expected: Array<Expected> = []

    const reply = await chat.invoke([new HumanMessage(HELLO)])
    assertEcho(reply.text)
    expected.push(billedFrom(modelId, tokensOf(reply)))

    let whole: AIMessageChunk | undefined
    let pieces = 0
    for await (const chunk of await chat.stream([new HumanMessage(HELLO)])) {
      whole = whole === undefined ? chunk : whole.concat(chunk)
      pieces += 1
    }
    assert.isAbove(pieces, 1, "the text arrives in pieces")
    assert.strictEqual(whole?.text, reply.text)
    const streamed = tokensOf(whole)
    const plain = tokensOf(reply)
    if (protocol.startsWith("ChatAnthropic") && (modelId === "sim-openai" || modelId === "sim-responses")) {
      // ChatAnthropic reads input tokens from message_start only. An OpenAI upstream (chat completions or Responses)
      // reports usage at the stream's
      // end, so message_start carries the gateway's own count of the conversation (what count_tokens answers, never
      // 0); the final message_delta and the charge carry the upstream's count.
      const counted = await fetch(`${h.gateway.url}/v1/messages/count_tokens`, {
        method: "POST",
        headers: { "x-api-key": customer.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
        body: JSON.stringify({ model: modelId, messages: [{ role: "user", content: HELLO }] })
      })
      const { input_tokens } = (await counted.json()) as { input_tokens: number }
      assert.strictEqual(streamed.input, input_tokens, "message_start carries the gateway's count")
      assert.isAtMost(Math.abs(streamed.input - plain.input), 2, "within the role tokens OpenAI counts per message")
    } else {
      assert.strictEqual(streamed.input, plain.input, "the same conversation, the same input tokens")
    }
    if (protocol.startsWith("ChatAnthropic")) {
      // ChatAnthropic adds message_start's placeholder output_tokens (Anthropic sends 1 there) to message_delta's
      // final count, so its streamed total can exceed the true one; the gateway charges the true one.
      assert.isAtLeast(streamed.output, plain.output)
      expected.push(billedFrom(modelId, plain))
    } else {
      assert.strictEqual(streamed.output, plain.output, "the same conversation, the same output tokens")
      expected.push(billedFrom(modelId, streamed))
    }

    await assertChargedAsSeen(h, customer, expected)
  })

  it("bindTools: the tool call comes back in tool_calls, and its ToolMessage result is answered", async () => {
    const customer = await h.admin.customer()
    const chat = chatFor(customer.key).bindTools([weatherTool])
    const question = new HumanMessage(WEATHER_PROMPT)

    const call = await chat.invoke([question])
    assert.strictEqual(call.tool_calls?.length, 1)
    const toolCall = call.tool_calls?.[0]
    assert.strictEqual(toolCall?.name, "get_weather")
    assert.isString(toolCall?.args.city)
    assert.isString(toolCall?.id)

    const answer = await chat.invoke([
      question,
      call,
      new ToolMessage({ tool_call_id: toolCall?.id ?? "", content: TOOL_RESULT })
    ])
    assert.deepStrictEqual(answer.tool_calls ?? [], [])
    assert.include(answer.text, "The tool returned: ")
    assert.include(answer.text, "21", "the answer quotes the tool's result")

    await assertChargedAsSeen(h, customer, [billedFrom(modelId, tokensOf(call)), billedFrom(modelId, tokensOf(answer))])
  })

  it("withStructuredOutput returns an object matching the schema", async () => {
    const customer = await h.admin.customer()
    const schema = z.object({ city: z.string(), temperature: z.number(), sunny: z.boolean() })
    const structured = (chatFor(customer.key) as BaseChatModel).withStructuredOutput(schema, { includeRaw: true })
    const result = await structured.invoke([new HumanMessage("Describe the weather in Paris.")])
    const parsed = schema.parse(result.parsed)
    assert.isString(parsed.city)
    await assertChargedAsSeen(h, customer, [billedFrom(modelId, tokensOf(result.raw as AIMessage))])
  })
})
