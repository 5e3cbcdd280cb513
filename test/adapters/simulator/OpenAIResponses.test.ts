/**
 * The simulator's `POST /v1/responses` against OpenAI's published schema and the official SDK: the `Response` object,
 * the stream's typed events in order with their sequence numbers, function calls, reasoning items (their summary and
 * `encrypted_content` round trip), Structured Outputs, the API's 400s, and the fault knobs.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { countOpenAIChat } from "../../../src/adapters/tokenizer/ChatTally.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { assertOpenAiSchema, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"
import { assertMatchesSchema } from "./SchemaCheck.ts"

// biome-ignore lint/suspicious/noExplicitAny: wire JSON read loosely in assertions
type Wire = any
type Sim = Simulator["Service"]

skipWithoutOpenAiSpec()

const weatherTool = {
  type: "function",
  name: "get_weather",
  description: "Current weather for a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
    additionalProperties: false
  },
  strict: true
}

const post = (sim: Sim, body: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${sim.baseUrl}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${sim.apiKey}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
    return { status: response.status, contentType: response.headers.get("content-type"), text: await response.text() }
  })

/** A JSON response, checked against OpenAI's `Response` schema. */
const create = (sim: Sim, body: Record<string, unknown>) =>
  post(sim, body).pipe(
    Effect.map(({ status, text }) => {
      assert.strictEqual(status, 200, text)
      const response: Wire = JSON.parse(text)
      assertOpenAiSchema("Response", response)
      return response
    })
  )

/** The SSE events of a streamed response, each checked: its `event:` line names its type, its number is its place. */
const stream = (sim: Sim, body: Record<string, unknown>) =>
  post(sim, { ...body, stream: true }).pipe(
    Effect.map(({ status, contentType, text }) => {
      assert.strictEqual(status, 200, text)
      assert.include(contentType ?? "", "text/event-stream")
      assert.notInclude(text, "[DONE]")
      const events: Array<Wire> = text
        .split("\n\n")
        .filter((block) => block.length > 0)
        .map((block) => {
          const name = /^event: (.*)$/m.exec(block)?.[1]
          const data = JSON.parse(/^data: (.*)$/m.exec(block)![1]!)
          assert.strictEqual(name, data.type)
          return data
        })
      events.forEach((event, index) => {
        assert.strictEqual(event.sequence_number, index)
        assertOpenAiSchema("ResponseStreamEvent", event)
      })
      return events
    })
  )

const failure = (sim: Sim, body: unknown, status = 400) =>
  post(sim, body).pipe(
    Effect.map((reply) => {
      assert.strictEqual(reply.status, status, reply.text)
      const error: Wire = JSON.parse(reply.text)
      assertOpenAiSchema("ErrorResponse", error)
      return error.error
    })
  )

const types = (events: ReadonlyArray<Wire>): Array<string> => events.map((event) => event.type)

const TEXT_EVENTS = ["response.content_part.added", "response.output_text.delta"]
const TEXT_CLOSE = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]

/** The event types with runs of deltas collapsed to one, so the order reads as the API documents it. */
const shape = (events: ReadonlyArray<Wire>): Array<string> =>
  types(events).filter((type, index, all) => !(type.endsWith(".delta") && all[index - 1] === type))

layer(Simulator.layer)("simulator speaks OpenAI's Responses API", (it) => {
  it.effect("JSON: a completed Response with the message, the request's settings and real usage", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const response = yield* create(sim, {
        model: "gpt-5",
        input: "Tell me about the simulator please",
        instructions: "Be brief.",
        metadata: { run: "1" },
        store: false
      })
      assert.match(response.id, /^resp_/)
      assert.strictEqual(response.object, "response")
      assert.strictEqual(response.status, "completed")
      assert.strictEqual(response.model, "gpt-5")
      assert.isNull(response.error)
      assert.isNull(response.incomplete_details)
      assert.strictEqual(response.instructions, "Be brief.")
      assert.deepStrictEqual(response.metadata, { run: "1" })
      assert.isFalse(response.store)
      assert.deepStrictEqual(response.text, { format: { type: "text" }, verbosity: "medium" })
      assert.strictEqual(response.output.length, 1)
      const [message] = response.output
      assert.match(message.id, /^msg_/)
      assert.strictEqual(message.type, "message")
      assert.strictEqual(message.status, "completed")
      assert.strictEqual(message.role, "assistant")
      assert.strictEqual(message.content.length, 1)
      const part = message.content[0]
      assert.deepStrictEqual([part.type, part.annotations, part.logprobs], ["output_text", [], []])
      assert.isTrue(part.text.startsWith("Echo: Tell me about the simulator please"))
      const inputTokens = countOpenAIChat({
        messages: [
          { role: "developer", content: "Be brief." },
          { role: "user", content: "Tell me about the simulator please" }
        ]
      })
      assert.deepStrictEqual(response.usage, {
        input_tokens: inputTokens,
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens: countText(part.text),
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: inputTokens + countText(part.text)
      })
    })
  )

  it.effect("the official SDK reads it (output_text), and the same input gets the same text", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const client = new OpenAI({ apiKey: sim.apiKey, baseURL: `${sim.baseUrl}/v1`, maxRetries: 0 })
      const input = [{ role: "user" as const, content: [{ type: "input_text" as const, text: "Say something" }] }]
      const first = yield* Effect.promise(() => client.responses.create({ model: "gpt-5", input }))
      const second = yield* Effect.promise(() => client.responses.create({ model: "gpt-5", input }))
      assert.isTrue(first.output_text.startsWith("Echo: Say something"))
      assert.strictEqual(second.output_text, first.output_text)
      assert.notStrictEqual(first.id, second.id)
      const events = yield* Effect.promise(async () => {
        const seen: Array<string> = []
        for await (const event of await client.responses.create({ model: "gpt-5", input, stream: true })) {
          seen.push(event.type)
        }
        return seen
      })
      assert.strictEqual(events[events.length - 1], "response.completed")
    })
  )

  it.effect("stream: the documented event order, numbered from 0, deltas adding up, no [DONE]", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const events = yield* stream(sim, { model: "gpt-5", input: "Stream this to me" })
      assert.deepStrictEqual(shape(events), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        ...TEXT_EVENTS,
        ...TEXT_CLOSE,
        "response.completed"
      ])
      const deltas = events.filter((event) => event.type === "response.output_text.delta")
      assert.isAbove(deltas.length, 3)
      const text = deltas.map((event) => event.delta).join("")
      assert.isTrue(text.startsWith("Echo: Stream this to me"))
      assert.strictEqual(events.find((event) => event.type === "response.output_text.done").text, text)
      assert.strictEqual(events[0].response.status, "in_progress")
      assert.deepStrictEqual(events[0].response.output, [])
      const completed = events[events.length - 1].response
      assert.strictEqual(completed.status, "completed")
      assert.strictEqual(completed.output[0].content[0].text, text)
      assert.strictEqual(completed.usage.output_tokens, countText(text))
      const itemIds = new Set(events.filter((event) => event.item_id !== undefined).map((event) => event.item_id))
      assert.deepStrictEqual([...itemIds], [completed.output[0].id])
    })
  )

  it.effect("function calling: a call with schema-shaped arguments, then text quoting the function's output", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const question = { role: "user", content: "What is the weather in Paris? Use get_weather." }
      const first = yield* create(sim, { model: "gpt-5", input: [question], tools: [weatherTool] })
      assert.strictEqual(first.output.length, 1)
      const call = first.output[0]
      assert.strictEqual(call.type, "function_call")
      assert.match(call.id, /^fc_/)
      assert.match(call.call_id, /^call_/)
      assert.strictEqual(call.status, "completed")
      assert.strictEqual(call.name, "get_weather")
      const args = JSON.parse(call.arguments)
      assertMatchesSchema(weatherTool.parameters, args)
      assert.deepStrictEqual(first.tools, [{ ...weatherTool }])

      const streamed = yield* stream(sim, { model: "gpt-5", input: [question], tools: [weatherTool] })
      assert.deepStrictEqual(shape(streamed), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed"
      ])
      const pieces = streamed.filter((event) => event.type === "response.function_call_arguments.delta")
      assert.strictEqual(pieces.map((event) => event.delta).join(""), call.arguments)
      assert.strictEqual(streamed[2].item.arguments, "")
      assert.strictEqual(streamed[2].item.status, "in_progress")

      const answer = { type: "function_call_output", call_id: call.call_id, output: '{"temperature":21,"sky":"clear"}' }
      const second = yield* create(sim, { model: "gpt-5", input: [question, call, answer], tools: [weatherTool] })
      assert.strictEqual(second.output[0].type, "message")
      assert.include(second.output[0].content[0].text, '{"temperature":21,"sky":"clear"}')

      const forced = yield* create(sim, {
        model: "gpt-5",
        input: "Hello",
        tools: [weatherTool],
        tool_choice: { type: "function", name: "get_weather" }
      })
      assert.strictEqual(forced.output[0].type, "function_call")
      const none = yield* create(sim, { model: "gpt-5", input: [question], tools: [weatherTool], tool_choice: "none" })
      assert.strictEqual(none.output[0].type, "message")
    })
  )

  it.effect("web_search: asked to search, one web_search_call with its query and sources before the answer", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const body = { model: "gpt-5", input: "Please search the web for tollgate", tools: [{ type: "web_search" }] }
      const response = yield* create(sim, body)
      assert.deepStrictEqual(
        response.output.map((item: Wire) => item.type),
        ["web_search_call", "message"]
      )
      const [search] = response.output
      assert.strictEqual(search.status, "completed")
      assert.strictEqual(search.action.type, "search")
      assert.include(search.action.query, "tollgate")
      assert.match(search.action.sources[0].url, /^https:\/\//)
      const events = yield* stream(sim, body)
      assert.deepStrictEqual(shape(events).slice(2, 7), [
        "response.output_item.added",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
        "response.output_item.done"
      ])
      // Not asked to search, or without the tool: no search.
      const plain = yield* create(sim, { ...body, input: "Hello" })
      assert.deepStrictEqual(
        plain.output.map((item: Wire) => item.type),
        ["message"]
      )
      const toolless = yield* create(sim, { ...body, tools: [] })
      assert.deepStrictEqual(
        toolless.output.map((item: Wire) => item.type),
        ["message"]
      )
    })
  )

  it.effect("reasoning: an rs_ item first with its summary and encrypted_content, counted as reasoning tokens", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const body = {
        model: "gpt-5",
        input: "What is the weather in Paris? Use get_weather.",
        tools: [weatherTool],
        reasoning: { effort: "low", summary: "auto" },
        include: ["reasoning.encrypted_content"],
        store: false
      }
      const response = yield* create(sim, body)
      assert.deepStrictEqual(
        response.output.map((item: Wire) => item.type),
        ["reasoning", "function_call"]
      )
      const reasoning = response.output[0]
      assert.match(reasoning.id, /^rs_/)
      assert.strictEqual(reasoning.summary.length, 1)
      assert.strictEqual(reasoning.summary[0].type, "summary_text")
      assert.include(reasoning.summary[0].text, "get_weather")
      assert.isString(reasoning.encrypted_content)
      assert.notInclude(reasoning.encrypted_content, "get_weather")
      const reasoningTokens = countText(reasoning.summary[0].text)
      assert.strictEqual(response.usage.output_tokens_details.reasoning_tokens, reasoningTokens)
      const call = response.output[1]
      assert.strictEqual(
        response.usage.output_tokens,
        reasoningTokens + countText(call.name) + countText(call.arguments)
      )
      assert.deepStrictEqual(response.reasoning, { effort: "low", summary: "auto" })

      // Handed back statelessly, the reasoning item and the call are accepted; edited, the reasoning is refused.
      const answer = { type: "function_call_output", call_id: call.call_id, output: "21 degrees" }
      const next = yield* create(sim, { ...body, input: [body.input, reasoning, call, answer].map(asItem) })
      assert.strictEqual(next.output[next.output.length - 1].type, "message")
      const forged = { ...reasoning, encrypted_content: Buffer.from("forged").toString("base64") }
      const refused = yield* failure(sim, { ...body, input: [asItem(body.input), forged, call, answer] })
      assert.strictEqual(refused.code, "invalid_encrypted_content")
      const alone = yield* failure(sim, { ...body, input: [asItem(body.input), reasoning] })
      assert.include(alone.message, "without its required following item")

      const plain = yield* create(sim, { model: "gpt-5", input: "Hi", reasoning: { effort: "medium" } })
      assert.deepStrictEqual(plain.output[0].summary, [])
      assert.notProperty(plain.output[0], "encrypted_content")
      assert.isAbove(plain.usage.output_tokens_details.reasoning_tokens, 0)
      const minimal = yield* create(sim, { model: "gpt-5", input: "Hi", reasoning: { effort: "minimal" } })
      assert.deepStrictEqual(
        minimal.output.map((item: Wire) => item.type),
        ["message"]
      )
      assert.strictEqual(minimal.usage.output_tokens_details.reasoning_tokens, 0)
    })
  )

  it.effect("reasoning streamed: summary part and text events, then the message, encrypted_content when done", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const events = yield* stream(sim, {
        model: "gpt-5",
        input: "Think about this",
        reasoning: { effort: "high", summary: "detailed" },
        include: ["reasoning.encrypted_content"]
      })
      assert.deepStrictEqual(shape(events), [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        ...TEXT_EVENTS,
        ...TEXT_CLOSE,
        "response.completed"
      ])
      const summary = events
        .filter((event) => event.type === "response.reasoning_summary_text.delta")
        .map((event) => event.delta)
        .join("")
      const done = events.find((event) => event.type === "response.output_item.done").item
      assert.deepStrictEqual(done.summary, [{ type: "summary_text", text: summary }])
      assert.isString(done.encrypted_content)
      const completed = events[events.length - 1].response
      assert.deepStrictEqual(completed.output[0], done)
      assert.strictEqual(events.find((event) => event.type === "response.content_part.added").output_index, 1)
      assert.strictEqual(completed.usage.output_tokens_details.reasoning_tokens, countText(summary))
    })
  )

  it.effect("text.format json_schema: the text is JSON valid against the schema; json_object needs the word", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const schema = {
        type: "object",
        properties: { name: { type: "string" }, age: { type: "integer", minimum: 0 } },
        required: ["name", "age"],
        additionalProperties: false
      }
      const format = { type: "json_schema", name: "person", schema, strict: true }
      const response = yield* create(sim, { model: "gpt-5", input: "Describe a person", text: { format } })
      assertMatchesSchema(schema, JSON.parse(response.output[0].content[0].text))
      assert.deepStrictEqual(response.text.format, format)
      const events = yield* stream(sim, { model: "gpt-5", input: "Describe a person", text: { format } })
      const text = events.find((event) => event.type === "response.output_text.done").text
      assertMatchesSchema(schema, JSON.parse(text))

      const loose = { ...format, schema: { ...schema, required: ["name"] } }
      const strictness = yield* failure(sim, { model: "gpt-5", input: "x", text: { format: loose } })
      assert.strictEqual(strictness.param, "text.format.schema")
      const unnamed = yield* failure(sim, {
        model: "gpt-5",
        input: "x",
        text: { format: { type: "json_schema", schema } }
      })
      assert.strictEqual(unnamed.param, "text.format.name")
      const json = yield* create(sim, {
        model: "gpt-5",
        input: "Answer in JSON",
        text: { format: { type: "json_object" } }
      })
      assert.isObject(JSON.parse(json.output[0].content[0].text))
      const word = yield* failure(sim, { model: "gpt-5", input: "Answer", text: { format: { type: "json_object" } } })
      assert.include(word.message, "'json'")
    })
  )

  it.effect("max_output_tokens cuts the reply: status incomplete, reason max_output_tokens, streamed too", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const body = { model: "gpt-5", input: "A long question that needs a long answer", max_output_tokens: 16 }
      const response = yield* create(sim, body)
      assert.strictEqual(response.status, "incomplete")
      assert.deepStrictEqual(response.incomplete_details, { reason: "max_output_tokens" })
      assert.strictEqual(response.output[0].status, "incomplete")
      assert.strictEqual(response.usage.output_tokens, 16)
      assert.strictEqual(response.max_output_tokens, 16)
      const events = yield* stream(sim, { ...body, input: "Another long question" })
      const last = events[events.length - 1]
      assert.strictEqual(last.type, "response.incomplete")
      assert.strictEqual(last.response.status, "incomplete")
      assert.deepStrictEqual(last.response.incomplete_details, { reason: "max_output_tokens" })
      assert.strictEqual(last.response.usage.output_tokens, 16)
    })
  )

  it.effect("the API's 400s, each naming its parameter, and 401 for a wrong key", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const noModel = yield* failure(sim, { input: "hi" })
      assert.deepStrictEqual(
        [noModel.type, noModel.param, noModel.code],
        ["invalid_request_error", "model", "missing_required_parameter"]
      )
      const noInput = yield* failure(sim, { model: "gpt-5" })
      assert.deepStrictEqual([noInput.param, noInput.code], ["input", "missing_required_parameter"])
      const badType = yield* failure(sim, { model: "gpt-5", input: [{ type: "bogus" }] })
      assert.deepStrictEqual([badType.param, badType.code], ["input[0].type", "invalid_value"])
      const badRole = yield* failure(sim, { model: "gpt-5", input: [{ role: "tool", content: "x" }] })
      assert.strictEqual(badRole.param, "input[0].role")
      const badPart = yield* failure(sim, {
        model: "gpt-5",
        input: [{ role: "assistant", content: [{ type: "input_text", text: "x" }] }]
      })
      assert.strictEqual(
        badPart.message,
        "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'."
      )
      const orphan = yield* failure(sim, {
        model: "gpt-5",
        input: [
          { role: "user", content: "hi" },
          { type: "function_call_output", call_id: "call_nope", output: "x" }
        ]
      })
      assert.strictEqual(orphan.message, "No tool call found for function call output with call_id call_nope.")
      assert.strictEqual(orphan.param, "input")
      const small = yield* failure(sim, { model: "gpt-5", input: "hi", max_output_tokens: 10 })
      assert.deepStrictEqual([small.param, small.code], ["max_output_tokens", "integer_below_min_value"])
      const chatShaped = yield* failure(sim, { model: "gpt-5", messages: [{ role: "user", content: "hi" }] })
      assert.deepStrictEqual([chatShaped.param, chatShaped.code], ["messages", "unsupported_parameter"])
      const chatTool = yield* failure(sim, {
        model: "gpt-5",
        input: "hi",
        tools: [{ type: "function", function: { name: "f", parameters: {} } }]
      })
      assert.strictEqual(chatTool.param, "tools[0].name")
      const unauthorized = yield* post(
        sim,
        { model: "gpt-5", input: "hi" },
        { authorization: "Bearer sk-wrong-key-1234" }
      )
      assert.strictEqual(unauthorized.status, 401)
    })
  )

  it.effect("fault knobs apply: a forced status in OpenAI's envelope, a stream cut after n events", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const limited = yield* post(sim, { model: "gpt-5", input: "hi" }, { "x-sim-fault": "status=429" })
      assert.strictEqual(limited.status, 429)
      assertOpenAiSchema("ErrorResponse", JSON.parse(limited.text))
      const cut = yield* Effect.promise(async () => {
        const response = await fetch(`${sim.baseUrl}/v1/responses`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${sim.apiKey}`,
            "content-type": "application/json",
            "x-sim-fault": "cut=3"
          },
          body: JSON.stringify({ model: "gpt-5", input: "hi", stream: true })
        })
        const decoder = new TextDecoder()
        let text = ""
        try {
          for await (const chunk of response.body as AsyncIterable<Uint8Array>) text += decoder.decode(chunk)
        } catch {
          // the simulator dropped the connection, as asked
        }
        return text
      })
      const received = cut.split("\n\n").filter((block) => block.startsWith("event: "))
      assert.isAtMost(received.length, 3)
      assert.notInclude(cut, "response.completed")
    })
  )
})

/** A string input as the user message item it stands for; items pass through. */
const asItem = (item: unknown): unknown => (typeof item === "string" ? { role: "user", content: item } : item)
