/**
 * The official `openai` package against the gateway over a real socket, for each sim model (upstream protocols
 * OpenAI, Anthropic and Gemini): plain, streamed with and without usage, tools across two turns, reasoning; every
 * request billed from the usage the client saw.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import OpenAI from "openai"
import type { ChatCompletionChunk, ChatCompletionMessageParam } from "openai/resources/chat/completions"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { formatMicros, parseDecimal } from "../../../src/domain/Money.ts"
import { assertBilled, type Expected, priceOf, settledLedger } from "./Billing.ts"
import { type ChatHarness, closeAfterReplay, SIM_MODELS, startChatHarness } from "./ChatHarness.ts"
import {
  assertEcho,
  assertToolAnswer,
  assertUpstreamToolIds,
  HELLO,
  lastUpstreamBody,
  TOOL_RESULT,
  WEATHER_PROMPT,
  weatherSchema,
  type Wire
} from "./Fixtures.ts"

let h: ChatHarness
beforeAll(async () => {
  h = await startChatHarness()
}, 60_000)
afterAll(() => closeAfterReplay(h))

const tools = [
  { type: "function" as const, function: { name: "get_weather", description: "Weather", parameters: weatherSchema } }
]

const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${h.gateway.url}/v1`, maxRetries: 0 })

const usageOf = (usage: OpenAI.CompletionUsage | null | undefined) => {
  assert.isDefined(usage ?? undefined, "usage")
  return { input: usage?.prompt_tokens ?? -1, output: usage?.completion_tokens ?? -1 }
}

const collect = async (stream: AsyncIterable<ChatCompletionChunk>) => {
  const chunks: Array<ChatCompletionChunk> = []
  for await (const chunk of stream) chunks.push(chunk)
  const deltas = chunks.flatMap((c) => c.choices.map((choice) => choice.delta as Record<string, Wire>))
  return {
    chunks,
    text: deltas.map((d) => d.content ?? "").join(""),
    reasoning: deltas.map((d) => d.reasoning_content ?? "").join(""),
    finish: chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter((f) => f !== null),
    toolCalls: deltas.flatMap((d) => d.tool_calls ?? [])
  }
}

describe.each(SIM_MODELS)("openai SDK → %s", (model) => {
  it("answers plain and streamed, with the usage chunk only when asked, billed from the usage seen", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const messages: Array<ChatCompletionMessageParam> = [{ role: "user", content: HELLO }]
    const expected: Array<Expected> = []

    const plain = await openai.chat.completions.create({ model, messages }).withResponse()
    assert.strictEqual(plain.data.object, "chat.completion")
    assert.strictEqual(plain.data.model, model)
    assertEcho(plain.data.choices[0].message.content)
    assert.strictEqual(plain.data.choices[0].finish_reason, "stop")
    const seen = usageOf(plain.data.usage)
    expected.push({
      requestId: plain.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: seen }
    })

    const bare = await openai.chat.completions.create({ model, messages, stream: true }).withResponse()
    const bareRead = await collect(bare.data)
    assert.strictEqual(bareRead.text, plain.data.choices[0].message.content)
    assert.deepStrictEqual(bareRead.finish, ["stop"])
    assert.isTrue(
      bareRead.chunks.every((c) => c.usage == null && c.choices.length === 1),
      "no usage chunk unless include_usage"
    )
    assert.isTrue(bareRead.chunks.every((c) => c.model === model && c.object === "chat.completion.chunk"))
    assert.strictEqual(new Set(bareRead.chunks.map((c) => c.id)).size, 1, "one id for every chunk")
    // The gateway asks for usage on the client's behalf, whatever the client asked.
    if (model === "sim-openai") assert.isTrue(lastUpstreamBody(h.sim).stream_options?.include_usage)
    expected.push({
      requestId: bare.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: { input: seen.input, output: countText(bareRead.text) } }
    })

    const counted = await openai.chat.completions
      .create({ model, messages, stream: true, stream_options: { include_usage: true } })
      .withResponse()
    const countedRead = await collect(counted.data)
    const usageChunks = countedRead.chunks.filter((c) => c.usage != null)
    assert.strictEqual(usageChunks.length, 1)
    assert.strictEqual(countedRead.chunks.at(-1), usageChunks[0], "the usage chunk comes last")
    assert.deepStrictEqual(usageChunks[0].choices, [])
    assert.deepStrictEqual(usageOf(usageChunks[0].usage), seen)
    expected.push({
      requestId: counted.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: seen }
    })

    await assertBilled(h.admin, customer, expected)
  })

  it("calls a tool and reads its result on a second turn, ids consistent up and down", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const expected: Array<Expected> = []
    const first: Array<ChatCompletionMessageParam> = [{ role: "user", content: WEATHER_PROMPT }]

    const turn1 = await openai.chat.completions.create({ model, messages: first, tools }).withResponse()
    const choice = turn1.data.choices[0]
    assert.strictEqual(choice.finish_reason, "tool_calls")
    const call = choice.message.tool_calls?.[0]
    assert.strictEqual(call?.type, "function")
    if (call?.type !== "function") return
    assert.isNotEmpty(call.id)
    assert.strictEqual(call.function.name, "get_weather")
    assert.deepStrictEqual(JSON.parse(call.function.arguments), { city: "Paris" })
    expected.push({
      requestId: turn1.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: usageOf(turn1.data.usage) }
    })

    // The same first turn streamed: the call arrives whole through the SDK's accumulator.
    const streamed = await openai.chat.completions.stream({ model, messages: first, tools }).finalChatCompletion()
    const streamedCall = streamed.choices[0].message.tool_calls?.[0]
    assert.strictEqual(streamed.choices[0].finish_reason, "tool_calls")
    assert.deepStrictEqual(streamedCall?.type === "function" ? [streamedCall.id, streamedCall.function.name] : [], [
      call.id,
      "get_weather"
    ])
    assert.deepStrictEqual(JSON.parse(streamedCall?.type === "function" ? streamedCall.function.arguments : ""), {
      city: "Paris"
    })
    expected.push({ requestId: undefined, model, outcome: { _tag: "Settled" } })

    const turn2 = await openai.chat.completions
      .create({
        model,
        tools,
        messages: [
          ...first,
          { role: "assistant", content: choice.message.content, tool_calls: choice.message.tool_calls },
          { role: "tool", tool_call_id: call.id, content: TOOL_RESULT }
        ]
      })
      .withResponse()
    assertToolAnswer(turn2.data.choices[0].message.content)
    assert.include(turn2.data.choices[0].message.content ?? "", "21")
    assert.strictEqual(turn2.data.choices[0].finish_reason, "stop")
    const upstreamId = assertUpstreamToolIds(h.sim)
    if (model !== "sim-gemini") assert.strictEqual(upstreamId, call.id, "the upstream gets back the id it issued")
    expected.push({
      requestId: turn2.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: usageOf(turn2.data.usage) }
    })

    await assertBilled(h.admin, customer, expected)
  })

  it("returns reasoning as reasoning_content, streamed and not, and carries it into a tool loop", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const expected: Array<Expected> = []
    const messages: Array<ChatCompletionMessageParam> = [{ role: "user", content: HELLO }]

    const plain = await openai.chat.completions
      .create({ model, messages, reasoning_effort: "low", max_completion_tokens: 4000 })
      .withResponse()
    const message = plain.data.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string }
    assert.match(message.reasoning_content ?? "", /^The user wrote: /)
    assertEcho(message.content)
    const seen = usageOf(plain.data.usage)
    // Anthropic's usage does not split thinking out of output_tokens, so only the other upstreams report it.
    if (model !== "sim-anthropic") {
      const reasoningTokens = plain.data.usage?.completion_tokens_details?.reasoning_tokens
      assert.strictEqual(reasoningTokens, countText(message.reasoning_content ?? ""))
    }
    expected.push({
      requestId: plain.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: seen }
    })

    const streamed = await openai.chat.completions
      .create({
        model,
        messages,
        reasoning_effort: "low",
        max_completion_tokens: 4000,
        stream: true,
        stream_options: { include_usage: true }
      })
      .withResponse()
    const read = await collect(streamed.data)
    assert.strictEqual(read.reasoning, message.reasoning_content)
    assert.strictEqual(read.text, message.content)
    assert.deepStrictEqual(usageOf(read.chunks.at(-1)?.usage), seen)
    expected.push({
      requestId: streamed.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: seen }
    })

    // A tool loop with reasoning on: the reasoning goes back on the assistant turn, as DeepSeek-style clients do.
    const first: Array<ChatCompletionMessageParam> = [{ role: "user", content: WEATHER_PROMPT }]
    const turn1 = await openai.chat.completions.create({
      model,
      messages: first,
      tools,
      reasoning_effort: "low",
      max_completion_tokens: 4000
    })
    const thought = turn1.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string }
    assert.match(thought.reasoning_content ?? "", /get_weather tool can answer/)
    const call = thought.tool_calls?.[0]
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: usageOf(turn1.usage) } })
    const turn2 = await openai.chat.completions.create({
      model,
      tools,
      reasoning_effort: "low",
      max_completion_tokens: 4000,
      messages: [
        ...first,
        {
          role: "assistant",
          content: thought.content,
          tool_calls: thought.tool_calls,
          reasoning_content: thought.reasoning_content
        } as ChatCompletionMessageParam,
        { role: "tool", tool_call_id: call?.id ?? "", content: TOOL_RESULT }
      ]
    })
    assertToolAnswer(turn2.choices[0].message.content)
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: usageOf(turn2.usage) } })
    if (model === "sim-anthropic") {
      // Lossy: the client cannot return a signed thinking block, so that turn goes upstream without thinking.
      assert.isUndefined(lastUpstreamBody(h.sim).thinking)
    }
    if (model === "sim-openai") {
      const assistant = lastUpstreamBody(h.sim).messages.find((m: Wire) => m.role === "assistant")
      assert.strictEqual(assistant.reasoning_content, thought.reasoning_content, "passed through untouched")
    }

    await assertBilled(h.admin, customer, expected)
  })
})

describe("openai SDK: one price per model and usage", () => {
  it("bills the same conversation the same on both protocols", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    for (const model of SIM_MODELS) {
      const viaOpenAI = await openai.chat.completions.create({ model, messages: [{ role: "user", content: HELLO }] })
      const viaAnthropic = await fetch(`${h.gateway.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": customer.key, "anthropic-version": "2023-06-01", "content-type": "application/json" },
        body: JSON.stringify({ model, max_tokens: 4096, messages: [{ role: "user", content: HELLO }] })
      }).then((r) => r.json())
      assert.strictEqual(viaAnthropic.content[0].text, viaOpenAI.choices[0].message.content)
      assert.strictEqual(
        viaAnthropic.usage.input_tokens + viaAnthropic.usage.cache_read_input_tokens,
        viaOpenAI.usage?.prompt_tokens
      )
      assert.strictEqual(viaAnthropic.usage.output_tokens, viaOpenAI.usage?.completion_tokens)
    }
    const entries = await assertBilled(
      h.admin,
      customer,
      SIM_MODELS.flatMap((model) => [
        { requestId: undefined, model, outcome: { _tag: "Settled" } } as const,
        { requestId: undefined, model, outcome: { _tag: "Settled" } } as const
      ])
    )
    const cost = entries.filter((e) => e.type === "UsageRecalculated").map((e) => e.data.cost)
    assert.deepStrictEqual([cost[0], cost[2], cost[4]], [cost[1], cost[3], cost[5]])
  })
})

describe("concurrent requests on one account", () => {
  it("each leave one hold and its resolution, and the balance adds up", async () => {
    const customer = await h.admin.customer()
    const openai = client(customer.key)
    const runs = SIM_MODELS.flatMap((model) =>
      [false, true].flatMap((stream) =>
        [0, 1].map(async () => {
          if (!stream) {
            const reply = await openai.chat.completions.create({ model, messages: [{ role: "user", content: HELLO }] })
            return { model, tokens: usageOf(reply.usage) }
          }
          const reply = await openai.chat.completions.create({
            model,
            messages: [{ role: "user", content: HELLO }],
            stream: true,
            stream_options: { include_usage: true }
          })
          const read = await collect(reply)
          return { model, tokens: usageOf(read.chunks.at(-1)?.usage) }
        })
      )
    )
    const results = await Promise.all(runs)
    const entries = await settledLedger(h.admin, customer.accountId)
    const holds = entries.filter((e) => e.type === "HoldPlaced")
    assert.strictEqual(holds.length, results.length)
    const captured = entries
      .filter((e) => e.type === "UsageRecalculated")
      .reduce((sum, e) => sum + (parseDecimal(String(e.data.captured)) ?? 0n), 0n)
    const priced = results.reduce((sum, r) => sum + (parseDecimal(priceOf(r.tokens)) ?? 0n), 0n)
    assert.strictEqual(captured, priced)
    const balance = await h.admin.balance(customer.accountId)
    assert.strictEqual(balance.held, "0.000000")
    assert.strictEqual(balance.captured, formatMicros(priced))
  })
})
