/**
 * The gateway's own description of `POST /v1/responses` (src/http/dialects/ResponsesRequestSchema.ts) against OpenAI's
 * published `CreateResponse` schema, where the document is present: for every typed field, random values are accepted
 * by one exactly when by the other (property-tested), and realistic requests both accept. Where the gateway is
 * stricter on purpose (ids and metadata bounded for storage) or more lenient (fields OpenAI's own SDKs leave out),
 * the cases say so. The checker's own behaviour (paths, quoting) is tested without the document.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { quoted } from "../../../src/http/FieldCheck.ts"
import { createResponse, inputItem, MAX_ID_LENGTH } from "../../../src/http/dialects/ResponsesRequestSchema.ts"
import { openAiSchemaErrors, openAiSpecMissing, skipWithoutOpenAiSpec } from "../../support/OpenAiSchema.ts"

skipWithoutOpenAiSpec()

const base = { model: "gpt-4o", input: "hi" }
const ours = (body: unknown) => createResponse(false)(body, "")
const theirs = (body: unknown) => openAiSchemaErrors("CreateResponse", body).length === 0

/** Values of every JSON kind, and the enum values and boundaries the schema names. */
const anyValue = fc.oneof(
  fc.constantFrom(null, true, false, 0, -1, 1, 2, 2.5, 16, 15, 20, 21, 1e308, 0.5, "", "auto", "disabled", "low"),
  fc.constantFrom("medium", "high", "minimal", "none", "xhigh", "max", "concise", "detailed", "flex", "priority"),
  fc.constantFrom("default", "scale", "in_memory", "24h", "reasoning.encrypted_content", "file_search_call.results"),
  fc.double({ noNaN: true }),
  fc.integer({ min: -100, max: 100 }),
  fc.string({ maxLength: 20 }),
  fc.array(fc.constantFrom("reasoning.encrypted_content", "message.output_text.logprobs", "x", 3), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.oneof(fc.string({ maxLength: 5 }), fc.integer()), { maxKeys: 3 })
)

/** Where the two must agree: a field (or a path into one) and how a value is put there. */
const typedFields: ReadonlyArray<readonly [string, (value: unknown) => Record<string, unknown>]> = [
  ...[
    "temperature",
    "top_p",
    "max_output_tokens",
    "truncation",
    "service_tier",
    "store",
    "stream",
    "background",
    "parallel_tool_calls",
    "instructions",
    "include",
    "prompt_cache_key",
    "prompt_cache_retention",
    "user"
  ].map((field) => [field, (value: unknown) => ({ [field]: value })] as const),
  ["top_logprobs", (value) => ({ top_logprobs: value })],
  ["reasoning.effort", (value) => ({ reasoning: { effort: value } })],
  ["reasoning.summary", (value) => ({ reasoning: { summary: value } })],
  ["text.verbosity", (value) => ({ text: { verbosity: value } })],
  ["text.format.type", (value) => ({ text: { format: { type: value } } })],
  ["tool_choice", (value) => ({ tool_choice: value })]
]

describe.skipIf(openAiSpecMissing !== undefined)("ResponsesRequestSchema agrees with OpenAI's CreateResponse", () => {
  for (const [path, put] of typedFields) {
    it(`${path}: accepted by the gateway exactly when by OpenAI's schema`, () => {
      fc.assert(
        fc.property(anyValue, (value) => {
          // Integers past 2^53 are refused on purpose: they cannot be read back as the number that was sent.
          fc.pre(!(typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value)))
          // No JSON body carries ±Infinity (JSON.parse never makes one), and Ajv counts it an integer: a run that drew
          // one failed on `max_output_tokens` with "null: gateway … expected an integer".
          fc.pre(!(typeof value === "number" && !Number.isFinite(value)))
          const body = { ...base, ...put(value) }
          const problem = ours(body)
          assert.strictEqual(
            problem === undefined,
            theirs(body),
            `${JSON.stringify(value)}: gateway ${problem?.message ?? "accepts"}`
          )
          if (problem !== undefined) assert.isTrue(problem.param.startsWith(path.split(".")[0] as string))
        }),
        { numRuns: 150 }
      )
    })
  }

  // The schema's `input` is a oneOf whose branches overlap (a user message matches two of them), so Ajv, which reads no
  // discriminator, refuses every message there: items are compared with their own components instead.
  it("input items: a message's role, and each item form, accepted by both", () => {
    fc.assert(
      fc.property(fc.oneof(anyValue, fc.constantFrom("user", "assistant", "system", "developer")), (role) => {
        const item = { role, content: "hi" }
        assert.strictEqual(
          inputItem(item, "input.0") === undefined,
          openAiSchemaErrors("EasyInputMessage", item).length === 0
        )
      }),
      { numRuns: 150 }
    )
    const items: ReadonlyArray<readonly [string, Record<string, unknown>]> = [
      ["EasyInputMessage", { type: "message", role: "developer", content: "Be brief." }],
      [
        "InputMessage",
        {
          type: "message",
          role: "user",
          content: [{ type: "input_image", image_url: "https://x.test/a.png", detail: "low" }]
        }
      ],
      ["FunctionToolCall", { type: "function_call", call_id: "c1", name: "f", arguments: "{}" }],
      ["FunctionCallOutputItemParam", { type: "function_call_output", call_id: "c1", output: "42" }],
      [
        "ReasoningItem",
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "t" }], encrypted_content: "e" }
      ],
      ["ItemReferenceParam", { type: "item_reference", id: "msg_1" }]
    ]
    for (const [component, item] of items) {
      assert.isUndefined(inputItem(item, "input.0"), component)
      assert.deepStrictEqual(openAiSchemaErrors(component, item), [], component)
    }
  })

  it("a realistic request with every tool type is accepted by both", () => {
    const request = {
      model: "m",
      input: "hi",
      instructions: "Be brief.",
      tools: [
        { type: "function", name: "f", parameters: { type: "object" }, strict: true },
        { type: "web_search" },
        { type: "web_search_preview" },
        { type: "file_search", vector_store_ids: ["vs_1"] },
        { type: "code_interpreter", container: { type: "auto" } },
        { type: "image_generation" },
        { type: "mcp", server_label: "s" },
        { type: "custom", name: "c" },
        { type: "computer_use_preview", environment: "browser", display_width: 1, display_height: 1 }
      ],
      tool_choice: { type: "function", name: "f" },
      text: { format: { type: "json_schema", name: "x", schema: { type: "object" }, strict: true }, verbosity: "low" },
      reasoning: { effort: "low", summary: "auto" },
      metadata: { a: "b" },
      conversation: { id: "conv_1" },
      truncation: "auto",
      max_output_tokens: 100,
      store: true
    }
    assert.isUndefined(ours(request), JSON.stringify(ours(request)))
    assert.deepStrictEqual(openAiSchemaErrors("CreateResponse", request), [])
  })

  it("stricter on purpose: ids and metadata bounded for storage, a message's status typed, which the schema leaves open", () => {
    const longId = "i".repeat(MAX_ID_LENGTH + 1)
    for (const body of [
      // OpenAI's schema lets any status through a message of the `EasyInputMessage` form (it has no status field).
      { ...base, input: [{ type: "message", role: "user", content: "hi", status: "done" }] },
      { ...base, input: [{ role: "user", content: "hi", id: longId, type: "message" }] },
      { ...base, previous_response_id: longId },
      { ...base, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }
    ]) {
      assert.isDefined(ours(body))
    }
  })
})

describe("the field checker", () => {
  it("names the first bad field by its path and quotes a bad value at most ~100 characters", () => {
    const problem = ours({
      ...base,
      tools: [
        { type: "function", name: "ok" },
        { type: "function", name: 7 }
      ]
    })
    assert.strictEqual(problem?.param, "tools.1.name")
    const huge = ours({ ...base, temperature: "z".repeat(300_000) })
    assert.strictEqual(huge?.param, "temperature")
    assert.isBelow(huge?.message.length ?? 0, 200)
    assert.strictEqual(quoted("x".repeat(500)).length, 101)
  })

  it("requires model to create, not to count", () => {
    assert.strictEqual(ours({ input: "hi" })?.param, "model")
    assert.isUndefined(createResponse(true)({ input: "hi" }, ""))
  })
})
