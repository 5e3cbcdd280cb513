/**
 * What clients read from a converted reply, through the real gateway and the simulator's three protocols: LangChain's
 * ChatAnthropic takes the input tokens from `message_start` alone, the AI SDK opens an empty text part for a
 * `content: ""` delta, and OpenAI clients expect `chatcmpl-` ids whatever model answered.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { assertOpenAiSchema, openAiSchemaErrors } from "../../support/OpenAiSchema.ts"
import { type ChatHarness, closeAfterReplay, type Customer, startChatHarness } from "./ChatHarness.ts"
import { DEFAULT_THINKING_SECRET, signThinking } from "../../../src/adapters/simulator/ThinkingSignature.ts"
import { HELLO, lastUpstreamBody, WEATHER_PROMPT, weatherSchema, type Wire } from "./Fixtures.ts"

let h: ChatHarness
beforeAll(async () => {
  // Compiled first: compiling mid-test takes longer than the server keeps an idle connection open.
  openAiSchemaErrors("CreateChatCompletionResponse", {})
  openAiSchemaErrors("CreateChatCompletionStreamResponse", {})
  h = await startChatHarness()
}, 60_000)
afterAll(() => closeAfterReplay(h))

const post = (path: string, customer: Customer, body: unknown) =>
  fetch(`${h.gateway.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${customer.key}`,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json"
    },
    body: JSON.stringify(body)
  })

const dataOf = (text: string): ReadonlyArray<Wire> =>
  text
    .split("\n\n")
    .flatMap((frame) => frame.split("\n").filter((l) => l.startsWith("data: ")))
    .map((l) => l.slice(6))
    .filter((d) => d !== "[DONE]")
    .map((d) => JSON.parse(d))

const openAiTools = [{ type: "function", function: { name: "get_weather", parameters: weatherSchema } }]
const anthropicTools = [{ name: "get_weather", input_schema: weatherSchema }]

describe.each(["sim-openai", "sim-gemini"])("a messages stream from %s", (model) => {
  it("reports the input tokens in message_start, and the final message_delta agrees with the bill", async () => {
    const customer = await h.admin.customer()
    for (const body of [
      { messages: [{ role: "user", content: HELLO }] },
      { messages: [{ role: "user", content: WEATHER_PROMPT }], tools: anthropicTools }
    ]) {
      const response = await post("/v1/messages", customer, { model, max_tokens: 256, stream: true, ...body })
      assert.strictEqual(response.status, 200)
      const events = dataOf(await response.text())
      const start = events.find((e) => e.type === "message_start")
      const delta = events.findLast((e) => e.type === "message_delta")
      assert.isAbove(start.message.usage.input_tokens, 0, "message_start carries the counted input")
      assert.strictEqual(start.message.usage.output_tokens, 0)
      // message_delta usage is cumulative: its input count, when present, is the one that was billed.
      assert.isAbove(delta.usage.input_tokens, 0)
      assert.isAbove(delta.usage.output_tokens, 0)
    }
  })
})

describe.each(["sim-anthropic", "sim-gemini"])("a chat completion from %s", (model) => {
  it("has a chatcmpl- id in JSON", async () => {
    const customer = await h.admin.customer()
    const response = await post("/v1/chat/completions", customer, {
      model,
      messages: [{ role: "user", content: HELLO }]
    })
    assert.strictEqual(response.status, 200)
    const body = await response.json()
    assert.match(body.id, /^chatcmpl-/)
    assertOpenAiSchema("CreateChatCompletionResponse", body)
  })

  it("streams one chatcmpl- id on every chunk, and a tool call first opens with role and no empty text", async () => {
    const customer = await h.admin.customer()
    for (const body of [
      { messages: [{ role: "user", content: HELLO }] },
      { messages: [{ role: "user", content: WEATHER_PROMPT }], tools: openAiTools, tool_choice: "required" }
    ]) {
      const response = await post("/v1/chat/completions", customer, {
        model,
        stream: true,
        stream_options: { include_usage: true },
        ...body
      })
      assert.strictEqual(response.status, 200)
      const chunks = dataOf(await response.text())
      for (const chunk of chunks) assertOpenAiSchema("CreateChatCompletionStreamResponse", chunk)
      const ids = new Set(chunks.map((c) => c.id))
      assert.strictEqual(ids.size, 1, "one id across the stream")
      assert.match([...ids][0], /^chatcmpl-/)
      const deltas = chunks.flatMap((c) => c.choices.map((choice: Wire) => choice.delta))
      assert.strictEqual(deltas[0].role, "assistant", "the first chunk says who speaks")
      assert.strictEqual(deltas.filter((d) => d.role !== undefined).length, 1, "and only the first")
      const firstContent = deltas.findIndex((d) => typeof d.content === "string")
      const firstCall = deltas.findIndex((d) => d.tool_calls !== undefined)
      if (firstCall >= 0 && (firstContent < 0 || deltas.slice(0, firstCall).every((d) => !d.content))) {
        // The tool call came first: no empty text delta before (or with) it.
        assert.isFalse(
          deltas.slice(0, firstCall + 1).some((d) => d.content === ""),
          JSON.stringify(deltas.slice(0, firstCall + 1))
        )
      }
      if (body.tools === undefined) assert.isAbove(firstContent, -1)
      else assert.isAbove(firstCall, -1)
    }
  })
})

/** The assistant turn an Anthropic client keeps from a reply, JSON or streamed. */
const anthropicTurn = async (response: Response, stream: boolean): Promise<ReadonlyArray<Wire>> => {
  if (!stream) return (await response.json()).content
  const blocks: Array<Wire> = []
  for (const event of dataOf(await response.text())) {
    if (event.type === "content_block_start") blocks[event.index] = { ...event.content_block, json: "" }
    if (event.type !== "content_block_delta") continue
    const block = blocks[event.index]
    const delta = event.delta
    if (delta.type === "text_delta") block.text += delta.text
    if (delta.type === "thinking_delta") block.thinking += delta.thinking
    if (delta.type === "signature_delta") block.signature += delta.signature
    if (delta.type === "input_json_delta") block.json += delta.partial_json
  }
  return blocks.map(({ json, ...block }) =>
    block.type === "tool_use" ? { ...block, input: json === "" ? {} : JSON.parse(json) } : block
  )
}

/** The assistant message an OpenAI client keeps from a reply, JSON or streamed. */
const openAiTurn = async (response: Response, stream: boolean): Promise<Wire> => {
  if (!stream) return (await response.json()).choices[0].message
  const message: Wire = { role: "assistant", content: "", reasoning_content: "", tool_calls: [] }
  for (const chunk of dataOf(await response.text())) {
    const delta = chunk.choices[0]?.delta ?? {}
    message.content += delta.content ?? ""
    message.reasoning_content += delta.reasoning_content ?? ""
    for (const call of delta.tool_calls ?? []) {
      const known = message.tool_calls[call.index]
      if (known === undefined) message.tool_calls[call.index] = call
      else known.function.arguments += call.function.arguments ?? ""
    }
  }
  return message
}

describe.each([false, true])("a Gemini model's signed thinking in another dialect (stream: %s)", (stream) => {
  it("goes back to Gemini on the next turn from an Anthropic client, and never to Anthropic as a signature", async () => {
    const customer = await h.admin.customer()
    const first = [{ role: "user", content: WEATHER_PROMPT }]
    const ask = (model: string, messages: ReadonlyArray<Wire>) =>
      post("/v1/messages", customer, {
        model,
        max_tokens: 4096,
        thinking: { type: "enabled", budget_tokens: 1024 },
        tools: anthropicTools,
        messages,
        ...(stream ? { stream: true } : {})
      })
    const reply = await ask("sim-gemini", first)
    assert.strictEqual(reply.status, 200)
    const content = await anthropicTurn(reply, stream)
    const thinking = content.find((b: Wire) => b.type === "thinking")
    const use = content.find((b: Wire) => b.type === "tool_use")
    assert.isDefined(thinking)
    assert.isDefined(use)
    const history = [
      ...first,
      { role: "assistant", content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: '{"temperature":21}' }] }
    ]
    const again = await ask("sim-gemini", history)
    assert.strictEqual(again.status, 200)
    await again.text()
    const parts = lastUpstreamBody(h.sim).contents.flatMap((c: Wire) => c.parts)
    const call = parts.find((p: Wire) => p.functionCall !== undefined)
    assert.strictEqual(call.thoughtSignature, signThinking(DEFAULT_THINKING_SECRET, thinking.thinking))
    assert.strictEqual(
      parts.find((p: Wire) => p.functionResponse !== undefined).functionResponse.id,
      call.functionCall.id
    )
    // The same conversation switched to Claude: the simulator, like Anthropic, refuses any signature it did not issue.
    const claude = await ask("sim-anthropic", history)
    assert.strictEqual(claude.status, 200, await claude.clone().text())
    await claude.text()
    assert.notInclude(JSON.stringify(lastUpstreamBody(h.sim)), call.thoughtSignature)
  })

  it("goes back to Gemini on the next turn from an OpenAI client, in the tool call's id", async () => {
    const customer = await h.admin.customer()
    const first = [{ role: "user", content: WEATHER_PROMPT }]
    const ask = (model: string, messages: ReadonlyArray<Wire>) =>
      post("/v1/chat/completions", customer, {
        model,
        reasoning_effort: "low",
        tools: openAiTools,
        messages,
        ...(stream ? { stream: true } : {})
      })
    const reply = await ask("sim-gemini", first)
    assert.strictEqual(reply.status, 200)
    const message = await openAiTurn(reply, stream)
    const id = message.tool_calls[0].id
    const history = [...first, message, { role: "tool", tool_call_id: id, content: '{"temperature":21}' }]
    const again = await ask("sim-gemini", history)
    assert.strictEqual(again.status, 200)
    await again.text()
    const parts = lastUpstreamBody(h.sim).contents.flatMap((c: Wire) => c.parts)
    const call = parts.find((p: Wire) => p.functionCall !== undefined)
    assert.strictEqual(call.thoughtSignature, signThinking(DEFAULT_THINKING_SECRET, message.reasoning_content))
    assert.notInclude(call.functionCall.id, call.thoughtSignature, "Gemini gets the id it issued, unpacked")
    const claude = await ask("sim-anthropic", history)
    assert.strictEqual(claude.status, 200, await claude.clone().text())
    await claude.text()
    assert.notInclude(JSON.stringify(lastUpstreamBody(h.sim)), call.thoughtSignature)
  })
})
