/**
 * The official `@anthropic-ai/sdk` against the gateway over a real socket, for each sim model: plain, streamed (one
 * `message_start`, blocks opened and closed in order), tools across two turns with ids in Anthropic's pattern,
 * thinking whose signed blocks go back on the next turn; every request billed from the usage the client saw.
 */
import Anthropic from "@anthropic-ai/sdk"
import type { MessageParam, RawMessageStreamEvent } from "@anthropic-ai/sdk/resources/messages"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { assertBilled, type Expected } from "./Billing.ts"
import { type ChatHarness, closeAfterReplay, SIM_MODELS, startChatHarness } from "./ChatHarness.ts"
import {
  ANTHROPIC_TOOL_ID,
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

const tools = [{ name: "get_weather", description: "Weather", input_schema: weatherSchema }]

const client = (key: string) => new Anthropic({ apiKey: key, baseURL: h.gateway.url, maxRetries: 0 })

const tokensOf = (usage: Anthropic.Usage | Anthropic.MessageDeltaUsage) => ({
  input: (usage.input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0),
  output: usage.output_tokens
})

/** Reads a raw event stream, asserting Anthropic's event grammar, and rebuilds the message from it. */
const readEvents = async (stream: AsyncIterable<RawMessageStreamEvent>) => {
  const events: Array<RawMessageStreamEvent> = []
  for await (const event of stream) events.push(event)
  const types = events.map((e) => e.type)
  assert.strictEqual(types.filter((t) => t === "message_start").length, 1, "exactly one message_start")
  assert.strictEqual(types[0], "message_start")
  assert.strictEqual(types.at(-1), "message_stop")
  const blocks: Array<Record<string, Wire>> = []
  let open: number | undefined
  for (const event of events) {
    switch (event.type) {
      case "content_block_start":
        assert.isUndefined(open, "a block opens only after the previous one closed")
        assert.strictEqual(event.index, blocks.length, "block indexes count up from 0")
        open = event.index
        blocks.push({ ...event.content_block, json: "" })
        break
      case "content_block_delta": {
        assert.strictEqual(event.index, open, "a delta belongs to the open block")
        const block = blocks[event.index]
        const delta = event.delta
        if (delta.type === "text_delta") block.text += delta.text
        else if (delta.type === "thinking_delta") block.thinking += delta.thinking
        else if (delta.type === "signature_delta") block.signature = delta.signature
        else if (delta.type === "input_json_delta") block.json += delta.partial_json
        break
      }
      case "content_block_stop":
        assert.strictEqual(event.index, open, "the open block closes")
        open = undefined
        break
      case "message_delta":
        assert.isUndefined(open, "message_delta after every block closed")
        break
    }
  }
  const start = events[0] as Anthropic.RawMessageStartEvent
  const delta = events.filter((e) => e.type === "message_delta").at(-1) as Anthropic.RawMessageDeltaEvent
  const content = blocks.map(({ json, ...block }) =>
    block.type === "tool_use" ? { ...block, input: json === "" ? {} : JSON.parse(json) } : block
  )
  return {
    start: start.message,
    content,
    stopReason: delta.delta.stop_reason,
    usage: { ...start.message.usage, ...Object.fromEntries(Object.entries(delta.usage).filter(([, v]) => v != null)) }
  }
}

describe.each(SIM_MODELS)("anthropic SDK → %s", (model) => {
  it("answers plain and streamed with Anthropic's event grammar, billed from the usage seen", async () => {
    const customer = await h.admin.customer()
    const anthropic = client(customer.key)
    const messages: Array<MessageParam> = [{ role: "user", content: HELLO }]
    const expected: Array<Expected> = []

    const plain = await anthropic.messages.create({ model, max_tokens: 512, messages }).withResponse()
    assert.strictEqual(plain.data.type, "message")
    assert.strictEqual(plain.data.model, model)
    assert.strictEqual(plain.data.stop_reason, "end_turn")
    assert.deepStrictEqual(
      plain.data.content.map((b) => b.type),
      ["text"]
    )
    const text = plain.data.content[0].type === "text" ? plain.data.content[0].text : ""
    assertEcho(text)
    const seen = tokensOf(plain.data.usage)
    expected.push({
      requestId: plain.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: seen }
    })

    const streamed = await anthropic.messages.create({ model, max_tokens: 512, messages, stream: true }).withResponse()
    const read = await readEvents(streamed.data)
    assert.strictEqual(read.start.model, model)
    assert.deepStrictEqual(read.content, [
      {
        type: "text",
        text,
        ...(read.content[0].citations === undefined ? {} : { citations: read.content[0].citations })
      }
    ])
    assert.strictEqual(read.stopReason, "end_turn")
    assert.deepStrictEqual(tokensOf(read.usage as Anthropic.Usage), seen)
    if (model === "sim-openai") assert.isTrue(lastUpstreamBody(h.sim).stream_options?.include_usage)
    expected.push({
      requestId: streamed.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: seen }
    })

    // The SDK's own accumulator agrees.
    const final = await anthropic.messages.stream({ model, max_tokens: 512, messages }).finalMessage()
    assert.deepStrictEqual(final.content[0].type === "text" && final.content[0].text, text)
    assert.deepStrictEqual(tokensOf(final.usage), seen)
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: seen } })

    await assertBilled(h.admin, customer, expected)
  })

  it("uses a tool across two turns with ids in Anthropic's pattern, streamed and not", async () => {
    const customer = await h.admin.customer()
    const anthropic = client(customer.key)
    const expected: Array<Expected> = []
    const first: Array<MessageParam> = [{ role: "user", content: WEATHER_PROMPT }]

    const turn1 = await anthropic.messages.create({ model, max_tokens: 512, tools, messages: first }).withResponse()
    assert.strictEqual(turn1.data.stop_reason, "tool_use")
    const use = turn1.data.content.find((b) => b.type === "tool_use")
    assert.isDefined(use)
    if (use?.type !== "tool_use") return
    assert.match(use.id, ANTHROPIC_TOOL_ID)
    assert.strictEqual(use.name, "get_weather")
    assert.deepStrictEqual(use.input, { city: "Paris" })
    expected.push({
      requestId: turn1.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: tokensOf(turn1.data.usage) }
    })

    const streamed = await anthropic.messages.create({ model, max_tokens: 512, tools, messages: first, stream: true })
    const read = await readEvents(streamed)
    assert.strictEqual(read.stopReason, "tool_use")
    const streamedUse = read.content.find((b) => b.type === "tool_use")
    assert.deepStrictEqual([streamedUse?.id, streamedUse?.name, streamedUse?.input], [use.id, use.name, use.input])
    expected.push({
      requestId: undefined,
      model,
      outcome: { _tag: "Usage", tokens: tokensOf(read.usage as Anthropic.Usage) }
    })

    const turn2 = await anthropic.messages
      .create({
        model,
        max_tokens: 512,
        tools,
        messages: [
          ...first,
          { role: "assistant", content: turn1.data.content },
          { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: TOOL_RESULT }] }
        ]
      })
      .withResponse()
    assert.strictEqual(turn2.data.stop_reason, "end_turn")
    const answer = turn2.data.content.find((b) => b.type === "text")
    assertToolAnswer(answer?.type === "text" ? answer.text : "")
    const upstreamId = assertUpstreamToolIds(h.sim)
    if (model !== "sim-gemini") assert.strictEqual(upstreamId, use.id, "the upstream gets back the id it issued")
    expected.push({
      requestId: turn2.response.headers.get("x-request-id") ?? "",
      model,
      outcome: { _tag: "Usage", tokens: tokensOf(turn2.data.usage) }
    })

    await assertBilled(h.admin, customer, expected)
  })

  it("returns thinking with a signature that the next turn of a tool loop can send back", async () => {
    const customer = await h.admin.customer()
    const anthropic = client(customer.key)
    const expected: Array<Expected> = []
    const thinking = { type: "enabled", budget_tokens: 1024 } as const
    const first: Array<MessageParam> = [{ role: "user", content: WEATHER_PROMPT }]

    const turn1 = await anthropic.messages.create({ model, max_tokens: 2048, thinking, tools, messages: first })
    assert.deepStrictEqual(
      turn1.content.map((b) => b.type),
      ["thinking", "tool_use"]
    )
    const block = turn1.content[0]
    assert.match(block.type === "thinking" ? block.thinking : "", /get_weather tool can answer/)
    const signature = block.type === "thinking" ? block.signature : ""
    assert.isNotEmpty(signature)
    // Only a genuine Anthropic upstream signs; reasoning from another vendor gets the gateway's tag.
    if (model === "sim-anthropic") assert.notMatch(signature, /^gw1\./)
    else assert.match(signature, /^gw1\./)
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(turn1.usage) } })

    const streamed = await anthropic.messages.create({
      model,
      max_tokens: 2048,
      thinking,
      tools,
      messages: first,
      stream: true
    })
    const read = await readEvents(streamed)
    assert.deepStrictEqual(read.content[0], {
      type: "thinking",
      thinking: (block as Anthropic.ThinkingBlock).thinking,
      signature
    })
    expected.push({
      requestId: undefined,
      model,
      outcome: { _tag: "Usage", tokens: tokensOf(read.usage as Anthropic.Usage) }
    })

    const use = turn1.content[1] as Anthropic.ToolUseBlock
    const turn2 = await anthropic.messages.create({
      model,
      max_tokens: 2048,
      thinking,
      tools,
      messages: [
        ...first,
        { role: "assistant", content: turn1.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: TOOL_RESULT }] }
      ]
    })
    assert.strictEqual(turn2.stop_reason, "end_turn")
    assert.deepStrictEqual(
      turn2.content.map((b) => b.type),
      ["thinking", "text"]
    )
    assertToolAnswer(turn2.content[1].type === "text" ? turn2.content[1].text : "")
    const upstream = lastUpstreamBody(h.sim)
    if (model === "sim-anthropic") {
      // Passed through untouched: the simulator verified the signature against the thinking text.
      assert.deepStrictEqual(upstream.messages[1].content[0], {
        type: "thinking",
        thinking: block.type === "thinking" ? block.thinking : "",
        signature
      })
    } else if (model === "sim-openai") {
      const assistant = upstream.messages.find((m: Wire) => m.role === "assistant")
      assert.strictEqual(assistant.reasoning_content, block.type === "thinking" ? block.thinking : "")
    }
    expected.push({ requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(turn2.usage) } })

    await assertBilled(h.admin, customer, expected)
  })
})

describe("anthropic SDK → an OpenAI-compatible vendor with foreign tool-call ids", () => {
  it("gets the id in Anthropic's pattern, and the vendor gets its own id back on the next turn", async () => {
    const customer = await h.admin.customer()
    const anthropic = client(customer.key)
    const model = "sim-kimi"
    const first: Array<MessageParam> = [{ role: "user", content: WEATHER_PROMPT }]
    const turn1 = await anthropic.messages.create({ model, max_tokens: 512, tools, messages: first })
    const use = turn1.content.find((b) => b.type === "tool_use") as Anthropic.ToolUseBlock
    assert.match(use.id, ANTHROPIC_TOOL_ID)
    assert.notStrictEqual(use.id, "functions.get_weather:0")
    const read = await readEvents(
      await anthropic.messages.create({ model, max_tokens: 512, tools, messages: first, stream: true })
    )
    assert.strictEqual(read.content.find((b) => b.type === "tool_use")?.id, use.id, "the same id streamed")
    const turn2 = await anthropic.messages.create({
      model,
      max_tokens: 512,
      tools,
      messages: [
        ...first,
        { role: "assistant", content: turn1.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: TOOL_RESULT }] }
      ]
    })
    assertToolAnswer(turn2.content[0].type === "text" ? turn2.content[0].text : "")
    assert.strictEqual(assertUpstreamToolIds(h.kimi), "functions.get_weather:0")
    await assertBilled(h.admin, customer, [
      { requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(turn1.usage) } },
      { requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(read.usage as Anthropic.Usage) } },
      { requestId: undefined, model, outcome: { _tag: "Usage", tokens: tokensOf(turn2.usage) } }
    ])
  })
})

describe("anthropic SDK: request ids", () => {
  // Anthropic's SDK reads `request-id`; the gateway sends it beside `x-request-id`.
  it("exposes the gateway's request id as the SDK's _request_id", async () => {
    const customer = await h.admin.customer()
    const message = await client(customer.key).messages.create({
      model: "sim-anthropic",
      max_tokens: 64,
      messages: [{ role: "user", content: HELLO }]
    })
    assert.match(message._request_id ?? "", /^req_/)
  })
})
