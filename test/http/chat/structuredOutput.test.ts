/**
 * Structured output through the gateway on the default catalog (the built-in simulator behind sim-openai,
 * sim-anthropic and sim-gemini): each protocol's JSON option, converted to whichever vendor serves the model, comes
 * back as JSON valid against the schema, in a JSON reply and in a stream. This is what AI SDK `generateObject` and
 * LangChain `withStructuredOutput` depend on.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { startTestGateway, type TestGateway } from "../../support/TestGateway.ts"
import { assertMatchesSchema } from "../../adapters/simulator/SchemaCheck.ts"
import { type Admin, type Customer, makeAdmin, SIM_MODELS } from "./ChatHarness.ts"
import type { Wire } from "./Fixtures.ts"

let gateway: TestGateway
let admin: Admin
let customer: Customer
beforeAll(async () => {
  gateway = await startTestGateway()
  admin = makeAdmin(gateway)
  customer = await admin.customer()
}, 60_000)
afterAll(() => gateway?.close())

/** What a client's zod schema becomes: strict (every property required, no extra ones), with an enum and a list. */
const recipe = {
  type: "object",
  properties: {
    name: { type: "string" },
    servings: { type: "integer", minimum: 1, maximum: 12 },
    difficulty: { type: "string", enum: ["easy", "medium", "hard"] },
    ingredients: {
      type: "array",
      items: {
        type: "object",
        properties: { item: { type: "string" }, grams: { type: "number", exclusiveMinimum: 0 } },
        required: ["item", "grams"],
        additionalProperties: false
      },
      minItems: 1
    },
    vegetarian: { type: ["boolean", "null"] }
  },
  required: ["name", "servings", "difficulty", "ingredients", "vegetarian"],
  additionalProperties: false
}

const PROMPT = "Give me a pancake recipe as JSON."

const post = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${customer.key}`,
      "x-goog-api-key": customer.key,
      "anthropic-version": "2023-06-01",
      "content-type": "application/json"
    },
    body: JSON.stringify(body)
  })

const dataOf = (sse: string): Array<Wire> =>
  sse
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line !== "data: [DONE]")
    .map((line) => JSON.parse(line.slice(6)))

const okText = async (response: Response): Promise<string> => {
  const text = await response.text()
  assert.strictEqual(response.status, 200, text)
  return text
}

describe.each(SIM_MODELS)("structured output through the gateway on %s", (model) => {
  it("OpenAI response_format json_schema (strict), JSON and streamed", async () => {
    const request = {
      model,
      messages: [{ role: "user", content: PROMPT }],
      response_format: { type: "json_schema", json_schema: { name: "recipe", strict: true, schema: recipe } }
    }
    const body = JSON.parse(await okText(await post("/v1/chat/completions", request)))
    assertMatchesSchema(recipe, JSON.parse(body.choices[0].message.content))
    const streamed = dataOf(await okText(await post("/v1/chat/completions", { ...request, stream: true })))
    const text = streamed.map((chunk) => chunk.choices[0]?.delta?.content ?? "").join("")
    assertMatchesSchema(recipe, JSON.parse(text))
  })

  it("OpenAI response_format json_object gives an object", async () => {
    const body = JSON.parse(
      await okText(
        await post("/v1/chat/completions", {
          model,
          messages: [{ role: "user", content: PROMPT }],
          response_format: { type: "json_object" }
        })
      )
    )
    const value = JSON.parse(body.choices[0].message.content)
    assert.isTrue(typeof value === "object" && value !== null && !Array.isArray(value))
  })

  it("Anthropic output_config.format json_schema, JSON and streamed", async () => {
    const request = {
      model,
      max_tokens: 1024,
      messages: [{ role: "user", content: PROMPT }],
      output_config: { format: { type: "json_schema", schema: recipe } }
    }
    const body = JSON.parse(await okText(await post("/v1/messages", request)))
    const text = body.content.find((block: Wire) => block.type === "text").text
    assertMatchesSchema(recipe, JSON.parse(text))
    const events = dataOf(await okText(await post("/v1/messages", { ...request, stream: true })))
    const streamed = events
      .filter((event) => event.type === "content_block_delta" && event.delta.type === "text_delta")
      .map((event) => event.delta.text)
      .join("")
    assertMatchesSchema(recipe, JSON.parse(streamed))
  })

  it("Anthropic forced tool (the structured-output pattern of older clients): the input validates", async () => {
    const body = JSON.parse(
      await okText(
        await post("/v1/messages", {
          model,
          max_tokens: 1024,
          messages: [{ role: "user", content: PROMPT }],
          tools: [{ name: "json", description: "Respond with a JSON object.", input_schema: recipe }],
          tool_choice: { type: "tool", name: "json" }
        })
      )
    )
    const use = body.content.find((block: Wire) => block.type === "tool_use")
    assert.strictEqual(use.name, "json")
    assertMatchesSchema(recipe, use.input)
  })

  it("Anthropic's beta output_format (older SDKs) is honoured on every upstream", async () => {
    const request = {
      model,
      max_tokens: 1024,
      messages: [{ role: "user", content: PROMPT }],
      output_format: { type: "json_schema", schema: recipe }
    }
    const body = JSON.parse(await okText(await post("/v1/messages", request)))
    assertMatchesSchema(recipe, JSON.parse(body.content.find((block: Wire) => block.type === "text").text))
  })

  it("Gemini responseSchema in Google's OpenAPI spelling (OBJECT, nullable), and JSON mode without a schema", async () => {
    const schema = {
      type: "OBJECT",
      properties: { title: { type: "STRING" }, servings: { type: "INTEGER", nullable: true } },
      required: ["title", "servings"]
    }
    const typed = {
      contents: [{ role: "user", parts: [{ text: "A pancake recipe" }] }],
      generationConfig: { responseMimeType: "application/json", responseSchema: schema }
    }
    const body = JSON.parse(await okText(await post(`/v1beta/models/${model}:generateContent`, typed)))
    const value = JSON.parse(body.candidates[0].content.parts[0].text)
    assert.isString(value.title)
    assert.isTrue(value.servings === null || Number.isInteger(value.servings), JSON.stringify(value))
    // No schema and no word "JSON" in the prompt: OpenAI would refuse json_object; the gateway says it for the client.
    const bare = {
      contents: [{ role: "user", parts: [{ text: "A pancake recipe" }] }],
      generationConfig: { responseMimeType: "application/json" }
    }
    const plain = JSON.parse(await okText(await post(`/v1beta/models/${model}:generateContent`, bare)))
    const object = JSON.parse(plain.candidates[0].content.parts[0].text)
    assert.isTrue(typeof object === "object" && object !== null && !Array.isArray(object))
  })

  it("Gemini responseMimeType with responseJsonSchema, JSON and streamed", async () => {
    const request = {
      contents: [{ role: "user", parts: [{ text: PROMPT }] }],
      generationConfig: { responseMimeType: "application/json", responseJsonSchema: recipe }
    }
    const body = JSON.parse(await okText(await post(`/v1beta/models/${model}:generateContent`, request)))
    assertMatchesSchema(recipe, JSON.parse(body.candidates[0].content.parts[0].text))
    const chunks = dataOf(await okText(await post(`/v1beta/models/${model}:streamGenerateContent?alt=sse`, request)))
    const text = chunks
      .flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? [])
      .map((part: Wire) => part.text ?? "")
      .join("")
    assertMatchesSchema(recipe, JSON.parse(text))
  })
})
