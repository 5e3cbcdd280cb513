/**
 * Structured output on the simulator, in each vendor's own request shape: JSON and streamed replies validate against
 * the requested schema, their output tokens are the JSON text's, and a forced tool's arguments validate too.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Simulator } from "../../../src/adapters/simulator/Simulator.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { assertMatchesSchema } from "./SchemaCheck.ts"

// biome-ignore lint/suspicious/noExplicitAny: wire JSON read loosely in assertions
type Wire = any

/** What AI SDK / LangChain send for a small "extract a person" schema (strict: every property required). */
const person = {
  type: "object",
  properties: {
    name: { type: "string" },
    age: { type: "integer", minimum: 0, maximum: 130 },
    email: { type: "string", format: "email" },
    role: { type: "string", enum: ["admin", "user", "guest"] },
    tags: { type: "array", items: { type: "string", pattern: "^[a-z]{2,8}$" }, minItems: 1, maxItems: 3 },
    manager: { anyOf: [{ $ref: "#/$defs/ref" }, { type: "null" }] },
    joined: { type: "string", format: "date-time" }
  },
  required: ["name", "age", "email", "role", "tags", "manager", "joined"],
  additionalProperties: false,
  $defs: {
    ref: {
      type: "object",
      properties: { id: { type: "string", format: "uuid" }, level: { type: "number", multipleOf: 0.5 } },
      required: ["id", "level"],
      additionalProperties: false
    }
  }
}

/** The same shape in Gemini's OpenAPI subset. */
const geminiPerson = {
  type: "OBJECT",
  properties: {
    name: { type: "STRING" },
    age: { type: "INTEGER", minimum: 0, maximum: 130 },
    role: { type: "STRING", format: "enum", enum: ["admin", "user", "guest"] },
    tags: { type: "ARRAY", items: { type: "STRING" }, minItems: 1 },
    nickname: { type: "STRING", nullable: true }
  },
  required: ["name", "age"],
  propertyOrdering: ["name", "age", "role", "tags", "nickname"]
}
const geminiPersonAsJsonSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    age: { type: "integer", minimum: 0, maximum: 130 },
    role: { enum: ["admin", "user", "guest"] },
    tags: { type: "array", items: { type: "string" }, minItems: 1 },
    nickname: { type: ["string", "null"] }
  },
  required: ["name", "age", "role", "tags", "nickname"]
}

const post = (url: string, headers: Record<string, string>, body: unknown) =>
  Effect.promise(async () => {
    const response = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body)
    })
    return { status: response.status, text: await response.text() }
  })

/** The JSON payloads of an SSE body's `data:` lines (OpenAI's `[DONE]` left out). */
const events = (sse: string): Array<Wire> =>
  sse
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)))

const openai = (sim: Simulator["Service"], body: unknown) =>
  post(`${sim.baseUrl}/v1/chat/completions`, { authorization: `Bearer ${sim.apiKey}` }, body)
const anthropic = (sim: Simulator["Service"], body: unknown) =>
  post(`${sim.baseUrl}/v1/messages`, { "x-api-key": sim.apiKey, "anthropic-version": "2023-06-01" }, body)
const gemini = (sim: Simulator["Service"], method: string, body: unknown) =>
  post(`${sim.baseUrl}/v1beta/models/gemini-2.5-flash:${method}`, { "x-goog-api-key": sim.apiKey }, body)

const ask = "Extract the person: Ada Lovelace, 36, ada@example.com"

layer(Simulator.layer)("structured output on the simulator", (it) => {
  it.effect("OpenAI json_schema: the content validates, in JSON and streamed, with the JSON's token count", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const request = {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: ask }],
        response_format: { type: "json_schema", json_schema: { name: "person", strict: true, schema: person } }
      }
      const reply = yield* openai(sim, request)
      assert.strictEqual(reply.status, 200, reply.text)
      const body = JSON.parse(reply.text)
      const content: string = body.choices[0].message.content
      assertMatchesSchema(person, JSON.parse(content))
      assert.strictEqual(body.choices[0].finish_reason, "stop")
      assert.strictEqual(body.usage.completion_tokens, countText(content))

      const streamed = yield* openai(sim, { ...request, stream: true })
      const text = events(streamed.text)
        .map((chunk) => chunk.choices[0]?.delta?.content ?? "")
        .join("")
      assert.strictEqual(text, content)
    })
  )

  it.effect("OpenAI json_object: an object; without the word JSON in the messages, the API's 400", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const ok = yield* openai(sim, {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "Answer in JSON please" }],
        response_format: { type: "json_object" }
      })
      assert.strictEqual(ok.status, 200, ok.text)
      const value = JSON.parse(JSON.parse(ok.text).choices[0].message.content)
      assert.isTrue(typeof value === "object" && value !== null && !Array.isArray(value))

      const refused = yield* openai(sim, {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "hello" }],
        response_format: { type: "json_object" }
      })
      assert.strictEqual(refused.status, 400)
      assert.include(JSON.parse(refused.text).error.message, "must contain the word 'json'")

      const unnamed = yield* openai(sim, {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "hello" }],
        response_format: { type: "json_schema", json_schema: { schema: person } }
      })
      assert.strictEqual(unnamed.status, 400)
      assert.strictEqual(JSON.parse(unnamed.text).error.param, "response_format.json_schema.name")
    })
  )

  it.effect("OpenAI strict mode refuses schemas that leave properties optional or open, as the API does", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const loose = {
        type: "object",
        properties: { name: { type: "string" }, address: { type: "object", properties: { city: { type: "string" } } } },
        required: ["name", "address"],
        additionalProperties: false
      }
      const messages = [{ role: "user", content: ask }]
      const format = (strict: boolean) => ({
        type: "json_schema",
        json_schema: { name: "person", strict, schema: loose }
      })
      const refused = yield* openai(sim, { model: "gpt-4o-mini", messages, response_format: format(true) })
      assert.strictEqual(refused.status, 400)
      const error = JSON.parse(refused.text).error
      assert.strictEqual(
        error.message,
        "Invalid schema for response_format 'person': In context=('properties', 'address'), 'additionalProperties' is required to be supplied and to be false."
      )
      assert.strictEqual(error.param, "response_format")

      const missing = yield* openai(sim, {
        model: "gpt-4o-mini",
        messages,
        response_format: {
          type: "json_schema",
          json_schema: { name: "p", strict: true, schema: { ...person, required: ["name"] } }
        }
      })
      assert.include(JSON.parse(missing.text).error.message, "Missing 'age'.")

      const tool = yield* openai(sim, {
        model: "gpt-4o-mini",
        messages,
        tools: [{ type: "function", function: { name: "save", parameters: loose, strict: true } }]
      })
      assert.strictEqual(tool.status, 400)
      assert.strictEqual(JSON.parse(tool.text).error.param, "tools[0].function.parameters")

      const lenient = yield* openai(sim, { model: "gpt-4o-mini", messages, response_format: format(false) })
      assert.strictEqual(lenient.status, 200, lenient.text)
      assertMatchesSchema(loose, JSON.parse(JSON.parse(lenient.text).choices[0].message.content))
    })
  )

  it.effect("OpenAI forced function: the arguments validate against its parameters", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* openai(sim, {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: ask }],
        tools: [{ type: "function", function: { name: "extract", parameters: person, strict: true } }],
        tool_choice: { type: "function", function: { name: "extract" } }
      })
      const call = JSON.parse(reply.text).choices[0].message.tool_calls[0]
      assertMatchesSchema(person, JSON.parse(call.function.arguments))
    })
  )

  it.effect("Anthropic output_config.format and the beta output_format: the text validates, streamed too", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      for (const option of [
        { output_config: { format: { type: "json_schema", schema: person } } },
        { output_format: { type: "json_schema", schema: person } }
      ]) {
        const request = { model: "claude-sonnet-4-5", max_tokens: 1024, messages: [{ role: "user", content: ask }] }
        const reply = yield* anthropic(sim, { ...request, ...option })
        assert.strictEqual(reply.status, 200, reply.text)
        const body = JSON.parse(reply.text)
        assert.strictEqual(body.content.length, 1)
        const text: string = body.content[0].text
        assertMatchesSchema(person, JSON.parse(text))
        assert.strictEqual(body.stop_reason, "end_turn")
        assert.strictEqual(body.usage.output_tokens, countText(text))

        const streamed = yield* anthropic(sim, { ...request, ...option, stream: true })
        const deltas = events(streamed.text)
          .filter((event) => event.type === "content_block_delta")
          .map((event) => event.delta.text)
          .join("")
        assert.strictEqual(deltas, text)
      }
    })
  )

  it.effect("Anthropic has no JSON mode: a system prompt that asks for JSON only gets a JSON object", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const request = { model: "claude-sonnet-4-5", max_tokens: 256, messages: [{ role: "user", content: "hello" }] }
      for (const system of [
        "Respond only with a single valid JSON object.",
        [
          { type: "text", text: "You are terse." },
          { type: "text", text: "Answer only in JSON." }
        ]
      ]) {
        const reply = yield* anthropic(sim, { ...request, system })
        const value = JSON.parse(JSON.parse(reply.text).content[0].text)
        assert.isTrue(typeof value === "object" && value !== null && !Array.isArray(value))
      }
      const plain = yield* anthropic(sim, { ...request, system: "You know JSON well." })
      assert.match(JSON.parse(plain.text).content[0].text, /^Echo: hello/)
    })
  )

  it.effect("Anthropic forced tool: the tool_use input validates against its input_schema", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* anthropic(sim, {
        model: "claude-sonnet-4-5",
        max_tokens: 1024,
        messages: [{ role: "user", content: ask }],
        tools: [{ name: "json", input_schema: person }],
        tool_choice: { type: "tool", name: "json" }
      })
      const use = JSON.parse(reply.text).content.find((block: Wire) => block.type === "tool_use")
      assertMatchesSchema(person, use.input)
    })
  )

  it.effect("Gemini responseSchema (OpenAPI subset) and responseJsonSchema: the text validates, streamed too", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const contents = [{ role: "user", parts: [{ text: ask }] }]
      for (const [config, schema] of [
        [{ responseMimeType: "application/json", responseSchema: geminiPerson }, geminiPersonAsJsonSchema],
        [{ response_mime_type: "application/json", response_json_schema: person }, person]
      ] as const) {
        const reply = yield* gemini(sim, "generateContent", { contents, generationConfig: config })
        assert.strictEqual(reply.status, 200, reply.text)
        const body = JSON.parse(reply.text)
        const text: string = body.candidates[0].content.parts[0].text
        assertMatchesSchema(schema, JSON.parse(text))
        assert.strictEqual(body.usageMetadata.candidatesTokenCount, countText(text))

        const streamed = yield* post(
          `${sim.baseUrl}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`,
          { "x-goog-api-key": sim.apiKey },
          { contents, generationConfig: config }
        )
        const joined = events(streamed.text)
          .map((chunk) => chunk.candidates[0].content.parts.map((part: Wire) => part.text ?? "").join(""))
          .join("")
        assert.strictEqual(joined, text)
      }
    })
  )

  it.effect("Gemini JSON without a schema is an object; text/x.enum answers one member", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const contents = [{ role: "user", parts: [{ text: "Is it raining?" }] }]
      const object = yield* gemini(sim, "generateContent", {
        contents,
        generationConfig: { responseMimeType: "application/json" }
      })
      const value = JSON.parse(JSON.parse(object.text).candidates[0].content.parts[0].text)
      assert.isTrue(typeof value === "object" && value !== null && !Array.isArray(value))

      const choice = yield* gemini(sim, "generateContent", {
        contents,
        generationConfig: { responseMimeType: "text/x.enum", responseSchema: { type: "STRING", enum: ["yes", "no"] } }
      })
      assert.include(["yes", "no"], JSON.parse(choice.text).candidates[0].content.parts[0].text)
    })
  )

  it.effect("Gemini forced function (ANY with one allowed name): the args validate", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const reply = yield* gemini(sim, "generateContent", {
        contents: [{ role: "user", parts: [{ text: ask }] }],
        tools: [{ functionDeclarations: [{ name: "extract", parametersJsonSchema: person }] }],
        toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["extract"] } }
      })
      const call = JSON.parse(reply.text).candidates[0].content.parts[0].functionCall
      assert.strictEqual(call.name, "extract")
      assertMatchesSchema(person, call.args)
    })
  )
})
