/**
 * Structured-output requests keep their meaning across dialects: Anthropic's beta `output_format`, Gemini's OpenAPI
 * `responseSchema` (upper-case types, `nullable`) and Gemini's schema-less JSON mode, each sent to an OpenAI upstream.
 */
import { assert, describe, it } from "@effect/vitest"
import { anthropicRequestToIR } from "../../../../src/plugins/text/convert/anthropicRequestToIR.ts"
import { geminiRequestToIR } from "../../../../src/plugins/text/convert/geminiRequestToIR.ts"
import { geminiSchemaToJsonSchema } from "../../../../src/plugins/text/convert/geminiSchema.ts"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { ok } from "./helpers.ts"

const CITY = { type: "object", properties: { city: { type: "string" } }, required: ["city"] }

describe("structured output across dialects", () => {
  it("Anthropic's beta output_format reaches OpenAI as response_format json_schema, like output_config.format", () => {
    for (const shape of [
      { output_format: { type: "json_schema", schema: CITY } },
      { output_config: { format: { type: "json_schema", schema: CITY } } }
    ]) {
      const ir = ok(
        anthropicRequestToIR({ model: "m", max_tokens: 50, messages: [{ role: "user", content: "Where?" }], ...shape })
      )
      const body = ok(irToOpenAIRequest(ir)) as { response_format?: { type: string; json_schema: { schema: unknown } } }
      assert.strictEqual(body.response_format?.type, "json_schema")
      assert.deepStrictEqual(body.response_format?.json_schema.schema, CITY)
    }
  })

  it("Gemini's responseSchema (OpenAPI subset) becomes JSON Schema: lower-case types, nullable as a null type", () => {
    const ir = ok(
      geminiRequestToIR(
        {
          contents: [{ role: "user", parts: [{ text: "Where?" }] }],
          generationConfig: {
            responseMimeType: "application/json",
            responseSchema: {
              type: "OBJECT",
              properties: {
                city: { type: "STRING", nullable: true },
                tags: { type: "ARRAY", items: { type: "STRING", enum: ["a", "b"] } }
              },
              required: ["city"],
              propertyOrdering: ["city", "tags"]
            }
          },
          tools: [
            {
              functionDeclarations: [
                { name: "f", parameters: { type: "OBJECT", properties: { n: { type: "INTEGER" } } } }
              ]
            }
          ]
        },
        { model: "m", stream: false }
      )
    )
    const body = ok(irToOpenAIRequest(ir)) as {
      response_format: { json_schema: { schema: unknown } }
      tools: Array<{ function: { parameters: unknown } }>
    }
    assert.deepStrictEqual(body.response_format.json_schema.schema, {
      type: "object",
      properties: {
        city: { type: ["string", "null"] },
        tags: { type: "array", items: { type: "string", enum: ["a", "b"] } }
      },
      required: ["city"]
    })
    assert.deepStrictEqual(body.tools[0]?.function.parameters, {
      type: "object",
      properties: { n: { type: "integer" } }
    })
  })

  it("Gemini's responseJsonSchema passes unchanged", () => {
    const schema = { type: "object", properties: { x: { type: ["string", "null"] } }, additionalProperties: false }
    const ir = ok(
      geminiRequestToIR(
        {
          contents: [{ role: "user", parts: [{ text: "x?" }] }],
          generationConfig: { responseMimeType: "application/json", responseJsonSchema: schema }
        },
        { model: "m", stream: false }
      )
    )
    assert.deepStrictEqual(ir.responseFormat, { type: "json_schema", schema })
  })

  it("a JSON mode without a schema says 'JSON' to OpenAI, which refuses json_object otherwise, and only once", () => {
    const plain = ok(
      geminiRequestToIR(
        {
          contents: [{ role: "user", parts: [{ text: "List three colours" }] }],
          generationConfig: { responseMimeType: "application/json" }
        },
        { model: "m", stream: false }
      )
    )
    const body = ok(irToOpenAIRequest(plain)) as {
      messages: Array<{ role: string; content: unknown }>
      response_format: unknown
    }
    assert.deepStrictEqual(body.response_format, { type: "json_object" })
    assert.match(JSON.stringify(body.messages[0]), /JSON/)
    assert.strictEqual(body.messages[0]?.role, "system")

    const said = ok(
      geminiRequestToIR(
        {
          contents: [{ role: "user", parts: [{ text: "List three colours as json" }] }],
          generationConfig: { responseMimeType: "application/json" }
        },
        { model: "m", stream: false }
      )
    )
    const untouched = ok(irToOpenAIRequest(said)) as { messages: Array<{ role: string }> }
    assert.deepStrictEqual(
      untouched.messages.map((m) => m.role),
      ["user"]
    )
  })

  it("geminiSchemaToJsonSchema leaves JSON Schema spellings alone and adds null to a nullable enum", () => {
    assert.deepStrictEqual(geminiSchemaToJsonSchema({ type: "string", enum: ["a"], nullable: true }), {
      type: ["string", "null"],
      enum: ["a", null]
    })
    assert.deepStrictEqual(geminiSchemaToJsonSchema({ type: "TYPE_UNSPECIFIED", description: "d" }), {
      description: "d"
    })
  })
})
