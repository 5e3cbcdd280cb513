/**
 * What clients read from a converted reply, through the real gateway and the simulator's three protocols: LangChain's
 * ChatAnthropic takes the input tokens from `message_start` alone, the AI SDK opens an empty text part for a
 * `content: ""` delta, and OpenAI clients expect `chatcmpl-` ids whatever model answered.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { assertOpenAiSchema, openAiSchemaErrors } from "../../support/OpenAiSchema.ts"
import { type ChatHarness, closeAfterReplay, type Customer, startChatHarness } from "./ChatHarness.ts"
import { HELLO, WEATHER_PROMPT, weatherSchema, type Wire } from "./Fixtures.ts"

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
