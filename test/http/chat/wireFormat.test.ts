/**
 * The bytes on the wire, read with plain fetch: SSE framing per dialect (OpenAI `data:` + `[DONE]`, Anthropic
 * `event:` lines with one `message_start` and blocks in order), and OpenAI-shaped bodies validated against OpenAI's
 * published schema.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import {
  assertOpenAiSchema,
  openAiSchemaErrors,
  openAiSpecMissing,
  skipWithoutOpenAiSpec
} from "../../support/OpenAiSchema.ts"
import { assertBilled, type Expected } from "./Billing.ts"
import { type ChatHarness, closeAfterReplay, type Customer, SIM_MODELS, startChatHarness } from "./ChatHarness.ts"
import { HELLO, WEATHER_PROMPT, weatherSchema, type Wire } from "./Fixtures.ts"

let h: ChatHarness
beforeAll(async () => {
  // Compiled first: compiling mid-test outlasts the server's idle keep-alive, and the next POST then meets ECONNRESET.
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

/**
 * Splits an SSE body into frames, insisting every frame ends with a blank line and holds only the protocol's own
 * `event:`/`data:` lines: no comment, no line of the gateway's (what a stream cost goes in HTTP trailers).
 */
const framesOf = (text: string) => {
  assert.isTrue(text.endsWith("\n\n"), "the stream ends on a frame boundary")
  const all = text.slice(0, -2).split("\n\n")
  for (const frame of all) {
    for (const line of frame.split("\n")) assert.match(line, /^(event|data): /, "only the protocol's own lines")
  }
  return all.map((frame) => {
    const lines = frame.split("\n")
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7)
    const data = lines
      .filter((l) => l.startsWith("data: "))
      .map((l) => l.slice(6))
      .join("\n")
    return { event, data, lines }
  })
}

const openAiTools = [{ type: "function", function: { name: "get_weather", parameters: weatherSchema } }]

skipWithoutOpenAiSpec()

describe.each(SIM_MODELS)("raw OpenAI stream from %s", (model) => {
  it("is data-only frames ending in [DONE], with the usage chunk only when asked, each chunk per OpenAI's schema", async () => {
    const customer = await h.admin.customer()
    for (const includeUsage of [false, true]) {
      const response = await post("/v1/chat/completions", customer, {
        model,
        messages: [{ role: "user", content: WEATHER_PROMPT }],
        tools: openAiTools,
        stream: true,
        ...(includeUsage ? { stream_options: { include_usage: true } } : {})
      })
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("content-type") ?? "", /^text\/event-stream/)
      const frames = framesOf(await response.text())
      assert.isTrue(
        frames.every((f) => f.event === undefined && f.lines.every((l) => l.startsWith("data: "))),
        "no event: lines"
      )
      assert.strictEqual(frames.at(-1)?.data, "[DONE]")
      assert.strictEqual(frames.filter((f) => f.data === "[DONE]").length, 1)
      const chunks = frames.slice(0, -1).map((f) => JSON.parse(f.data))
      for (const chunk of chunks) assertOpenAiSchema("CreateChatCompletionStreamResponse", chunk)
      const withUsage = chunks.filter((c) => c.usage != null)
      if (includeUsage) {
        assert.strictEqual(withUsage.length, 1)
        assert.strictEqual(chunks.at(-1), withUsage[0])
        assert.deepStrictEqual(withUsage[0].choices, [])
      } else {
        assert.strictEqual(withUsage.length, 0)
        assert.isTrue(chunks.every((c) => c.choices.length === 1))
      }
      const calls = chunks.flatMap((c) => c.choices.flatMap((choice: Wire) => choice.delta.tool_calls ?? []))
      assert.strictEqual(calls[0].index, 0)
      assert.strictEqual(calls[0].function.name, "get_weather")
      assert.isNotEmpty(calls[0].id)
      assert.isTrue(
        calls.slice(1).every((c: Wire) => c.id === undefined && c.index === 0),
        "later fragments carry no id"
      )
      assert.deepStrictEqual(JSON.parse(calls.map((c: Wire) => c.function?.arguments ?? "").join("")), {
        city: "Paris"
      })
      assert.deepStrictEqual(
        chunks.flatMap((c) => c.choices.map((choice: Wire) => choice.finish_reason)).filter((f) => f !== null),
        ["tool_calls"]
      )
    }
    await assertBilled(h.admin, customer, [
      { requestId: undefined, model, outcome: { _tag: "Settled" } },
      { requestId: undefined, model, outcome: { _tag: "Settled" } }
    ])
  })
})

describe.each(SIM_MODELS)("raw Anthropic stream from %s", (model) => {
  it("names every event, opens one message, and opens and closes thinking and tool blocks in order", async () => {
    const customer = await h.admin.customer()
    const response = await post("/v1/messages", customer, {
      model,
      max_tokens: 2048,
      thinking: { type: "enabled", budget_tokens: 1024 },
      tools: [{ name: "get_weather", input_schema: weatherSchema }],
      messages: [{ role: "user", content: WEATHER_PROMPT }],
      stream: true
    })
    assert.strictEqual(response.status, 200)
    const frames = framesOf(await response.text())
    const events = frames.map((f) => {
      const data = JSON.parse(f.data)
      assert.strictEqual(f.event, data.type, "the event: line names the data's type")
      return data
    })
    const names = events.map((e) => e.type).filter((t) => t !== "ping")
    assert.deepStrictEqual(names.slice(0, 1), ["message_start"])
    assert.strictEqual(names.filter((n) => n === "message_start").length, 1)
    assert.deepStrictEqual(names.slice(-2), ["message_delta", "message_stop"])
    const starts = events.filter((e) => e.type === "content_block_start")
    assert.deepStrictEqual(
      starts.map((e) => [e.index, e.content_block.type]),
      [
        [0, "thinking"],
        [1, "tool_use"]
      ]
    )
    // Each block: start, its deltas, stop, before the next one starts.
    const structural = events
      .filter((e) => e.type.startsWith("content_block"))
      .map((e) => `${e.type}:${e.index}:${e.delta?.type ?? e.content_block?.type ?? ""}`)
    const collapsed = structural.filter((s, i) => s !== structural[i - 1])
    assert.deepStrictEqual(collapsed, [
      "content_block_start:0:thinking",
      "content_block_delta:0:thinking_delta",
      "content_block_delta:0:signature_delta",
      "content_block_stop:0:",
      "content_block_start:1:tool_use",
      "content_block_delta:1:input_json_delta",
      "content_block_stop:1:"
    ])
    assert.deepStrictEqual(starts[1].content_block.input, {})
    const json = events
      .filter((e) => e.delta?.type === "input_json_delta")
      .map((e) => e.delta.partial_json)
      .join("")
    assert.deepStrictEqual(JSON.parse(json), { city: "Paris" })
    const stop = events.find((e) => e.type === "message_delta")
    assert.strictEqual(stop.delta.stop_reason, "tool_use")
    assert.isAbove(stop.usage.output_tokens, 0)
    assert.notInclude(
      frames.map((f) => f.data),
      "[DONE]"
    )
    await assertBilled(h.admin, customer, [
      {
        requestId: response.headers.get("x-request-id") ?? "",
        model,
        outcome: {
          _tag: "Usage",
          tokens: {
            input: stop.usage.input_tokens ?? events[0].message.usage.input_tokens,
            output: stop.usage.output_tokens
          }
        }
      }
    ])
  })
})

describe("OpenAI-shaped bodies against OpenAI's published schema", () => {
  it.skipIf(openAiSpecMissing !== undefined)("has a validator that rejects what the schema rejects", () => {
    assert.isNotEmpty(openAiSchemaErrors("CreateChatCompletionResponse", { id: "x", object: "chat.completion" }))
    assert.isNotEmpty(openAiSchemaErrors("ErrorResponse", { error: { message: "m", type: "t" } }))
    assert.isNotEmpty(
      openAiSchemaErrors("CreateChatCompletionStreamResponse", {
        id: "x",
        object: "chat.completion.chunk",
        created: 1,
        model: "m",
        choices: [{ index: 0, delta: {}, finish_reason: "done" }]
      })
    )
  })

  it("validates completions (text and tool call), the model list and error bodies", async () => {
    const customer = await h.admin.customer()
    const poor = await h.admin.customer({ deposit: "0.000010" })
    const expected: Array<Expected> = []
    for (const model of SIM_MODELS) {
      for (const body of [
        { model, messages: [{ role: "user", content: HELLO }] },
        { model, messages: [{ role: "user", content: WEATHER_PROMPT }], tools: openAiTools }
      ]) {
        const response = await post("/v1/chat/completions", customer, body)
        assert.strictEqual(response.status, 200)
        assertOpenAiSchema("CreateChatCompletionResponse", await response.json())
        expected.push({ requestId: response.headers.get("x-request-id") ?? "", model, outcome: { _tag: "Settled" } })
      }
    }
    const models = await fetch(`${h.gateway.url}/v1/models`, { headers: { authorization: `Bearer ${customer.key}` } })
    assertOpenAiSchema("ListModelsResponse", await models.json())

    const errors = [
      await post("/v1/chat/completions", customer, {
        model: "no-such-model",
        messages: [{ role: "user", content: "x" }]
      }),
      await post("/v1/chat/completions", poor, { model: "sim-openai", messages: [{ role: "user", content: "x" }] }),
      await post("/v1/chat/completions", customer, { messages: [] }),
      await fetch(`${h.gateway.url}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: "Bearer sk-wrong" }
      })
    ]
    assert.deepStrictEqual(
      errors.map((r) => r.status),
      [404, 402, 400, 401]
    )
    for (const response of errors) assertOpenAiSchema("ErrorResponse", await response.json())
    h.sim.setFaults({ status: 500 }, 1)
    const upstream = await post("/v1/chat/completions", customer, {
      model: "sim-openai",
      messages: [{ role: "user", content: "x" }]
    })
    assert.strictEqual(upstream.status, 502)
    assertOpenAiSchema("ErrorResponse", await upstream.json())
    expected.push({ requestId: undefined, model: "sim-openai", outcome: { _tag: "Released", reason: "failed" } })
    await assertBilled(h.admin, customer, expected)
  })
})
