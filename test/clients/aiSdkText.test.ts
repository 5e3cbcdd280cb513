/**
 * The Vercel AI SDK (`ai` 6) as people use it, against the real gateway on its built-in simulator: every default text
 * model through each client protocol the SDK speaks (OpenAI Responses via the default `openai(model)`, chat-completions
 * via `openai.chat`, Anthropic messages, Gemini generateContent). Text, streamed text, a tool round trip (call → result → answer, plain and streamed) and
 * structured output; every request charged exactly the usage the SDK reported.
 */
import { createAnthropic } from "@ai-sdk/anthropic"
import { createGoogleGenerativeAI } from "@ai-sdk/google"
import { createOpenAI } from "@ai-sdk/openai"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  generateObject,
  generateText,
  type LanguageModel,
  type LanguageModelUsage,
  stepCountIs,
  streamText,
  tool
} from "ai"
import { z } from "zod"
import type { Expected } from "../http/chat/Billing.ts"
import { assertEcho, HELLO, WEATHER_PROMPT } from "../http/chat/Fixtures.ts"
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

/** Each client protocol: the SDK provider for it, pointed at the gateway the way its docs say to. */
const PROTOCOLS: Record<string, (key: string, model: string) => LanguageModel> = {
  // The provider's default since AI SDK 5: OpenAI's Responses API.
  "openai responses": (key, model) =>
    createOpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch })(model),
  "openai chat-completions": (key, model) =>
    createOpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch }).chat(model),
  "anthropic messages": (key, model) =>
    createAnthropic({ apiKey: key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch }).messages(model),
  "gemini generateContent": (key, model) =>
    createGoogleGenerativeAI({ apiKey: key, baseURL: `${h.gateway.url}/v1beta`, fetch: h.fetch }).chat(model)
}

const CASES = Object.keys(PROTOCOLS).flatMap((protocol) => TEXT_MODELS.map((model) => [protocol, model] as const))

const tokensOf = (usage: LanguageModelUsage) => ({ input: usage.inputTokens ?? -1, output: usage.outputTokens ?? -1 })

const weather = tool({
  description: "The current weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, temperature: 21, unit: "celsius" })
})

/** streamText reports failures to `onError` rather than throwing: collect them so the test can show the first. */
const failures = () => {
  const errors: Array<unknown> = []
  return {
    onError: ({ error }: { error: unknown }) => {
      errors.push(error)
    },
    check: () => {
      if (errors.length > 0) throw errors[0]
    }
  }
}

describe.each(CASES)("AI SDK %s → %s", (protocol, modelId) => {
  const modelFor = (key: string) => PROTOCOLS[protocol](key, modelId)

  it("generateText and streamText answer the same text, each charged the usage the SDK reports", async () => {
    const customer = await h.admin.customer()
    const model = modelFor(customer.key)
    const expected: Array<Expected> = []

    const plain = await generateText({ model, prompt: HELLO, maxRetries: 0 })
    assertEcho(plain.text)
    assert.strictEqual(plain.finishReason, "stop")
    expected.push(billedFrom(modelId, tokensOf(plain.usage)))

    const errors = failures()
    const streamed = streamText({ model, prompt: HELLO, maxRetries: 0, onError: errors.onError })
    const pieces: Array<string> = []
    for await (const piece of streamed.textStream) pieces.push(piece)
    errors.check()
    assert.strictEqual(pieces.join(""), plain.text)
    assert.isAbove(pieces.length, 1, "the text arrives in pieces")
    assert.strictEqual(await streamed.finishReason, "stop")
    const streamedUsage = tokensOf(await streamed.usage)
    assert.deepStrictEqual(streamedUsage, tokensOf(plain.usage), "the same conversation, the same usage")
    expected.push(billedFrom(modelId, streamedUsage))

    await assertChargedAsSeen(h, customer, expected)
  })

  it("runs a tool round trip (call → result → final answer), plain and streamed", async () => {
    const customer = await h.admin.customer()
    const model = modelFor(customer.key)
    const expected: Array<Expected> = []

    const plain = await generateText({
      model,
      prompt: WEATHER_PROMPT,
      tools: { get_weather: weather },
      stopWhen: stepCountIs(3),
      maxRetries: 0
    })
    assert.deepStrictEqual(
      plain.steps.map((step) => step.finishReason),
      ["tool-calls", "stop"]
    )
    const call = plain.steps[0].toolCalls[0]
    assert.strictEqual(call?.toolName, "get_weather")
    assert.isString((call?.input as { city?: unknown } | undefined)?.city)
    assert.strictEqual(plain.steps[0].toolResults[0]?.toolCallId, call?.toolCallId)
    assert.include(plain.text, "The tool returned: ")
    assert.include(plain.text, "21", "the answer quotes the tool's result")
    for (const step of plain.steps) expected.push(billedFrom(modelId, tokensOf(step.usage)))

    const errors = failures()
    const streamed = streamText({
      model,
      prompt: WEATHER_PROMPT,
      tools: { get_weather: weather },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
      onError: errors.onError
    })
    const parts: Array<string> = []
    for await (const part of streamed.fullStream) parts.push(part.type)
    errors.check()
    const steps = await streamed.steps
    assert.deepStrictEqual(
      steps.map((step) => step.finishReason),
      ["tool-calls", "stop"]
    )
    assert.strictEqual(steps[0].toolCalls[0]?.toolName, "get_weather")
    assert.deepStrictEqual(
      steps[0].content.filter((part) => part.type === "text").map((part) => part.text),
      [],
      "the tool-calling step carries no text"
    )
    assert.include(parts, "tool-result")
    assert.include(await streamed.text, "The tool returned: ")
    for (const step of steps) expected.push(billedFrom(modelId, tokensOf(step.usage)))

    await assertChargedAsSeen(h, customer, expected)
  })

  it("generateObject returns an object matching the schema", async () => {
    const customer = await h.admin.customer()
    const result = await generateObject({
      model: modelFor(customer.key),
      schema: z.object({ city: z.string(), temperature: z.number(), sunny: z.boolean() }),
      prompt: "Describe the weather in Paris as JSON.",
      maxRetries: 0
    })
    assert.isString(result.object.city)
    assert.isNumber(result.object.temperature)
    assert.isBoolean(result.object.sunny)
    await assertChargedAsSeen(h, customer, [billedFrom(modelId, tokensOf(result.usage))])
  })
})

describe.each(TEXT_MODELS)("AI SDK openai(model) → %s: a conversation kept by the gateway", (modelId) => {
  it("continues with previousResponseId, the earlier turns rebuilt from storage, each turn charged as reported", async () => {
    const customer = await h.admin.customer()
    const model = createOpenAI({ apiKey: customer.key, baseURL: `${h.gateway.url}/v1`, fetch: h.fetch })(modelId)
    const first = await generateText({ model, prompt: "My name is Ada. Remember it.", maxRetries: 0 })
    const responseId = (first.providerMetadata?.openai as { responseId?: string } | undefined)?.responseId
    assert.match(responseId ?? "", /^resp_/)
    const second = await generateText({
      model,
      prompt: "What is my name?",
      providerOptions: { openai: { previousResponseId: responseId } },
      maxRetries: 0
    })
    assert.match(second.text, /^Echo: What is my name\?/)
    assert.isAbove(
      second.usage.inputTokens ?? 0,
      first.usage.inputTokens ?? 0,
      "the model was given the first turn as well"
    )
    await assertChargedAsSeen(h, customer, [
      billedFrom(modelId, tokensOf(first.usage)),
      billedFrom(modelId, tokensOf(second.usage))
    ])
  })
})
