import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { planReply, type Turn } from "../../../src/adapters/simulator/Reply.ts"
import { signThinking, verifyThinking } from "../../../src/adapters/simulator/ThinkingSignature.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"
import { assertMatchesSchema } from "./SchemaCheck.ts"

const turn = (overrides: Partial<Turn> = {}): Turn => ({
  lastUserText: "Hello there",
  toolResult: undefined,
  tools: [],
  toolMode: { _tag: "Auto" },
  thinking: false,
  maxTokens: undefined,
  replyTokens: 24,
  stopSequences: [],
  seed: "seed",
  ...overrides
})

const weather = {
  name: "get_weather",
  schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
}

describe("planReply", () => {
  it("echoes the last user message and is deterministic", () => {
    const plan = planReply(turn())
    assert.isTrue(plan.text!.startsWith("Echo: Hello there"))
    assert.strictEqual(plan.outputTokens, 24)
    assert.deepStrictEqual(planReply(turn()), plan)
  })

  it("never exceeds max tokens and reports length when it cuts", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 80 }),
        fc.integer({ min: 0, max: 60 }),
        fc.boolean(),
        (text, maxTokens, thinking) => {
          const plan = planReply(turn({ lastUserText: text, maxTokens, thinking }))
          const wanted = planReply(turn({ lastUserText: text, thinking }))
          return (
            plan.outputTokens <= maxTokens &&
            (plan.finish === "length") === wanted.outputTokens > maxTokens &&
            plan.outputTokens === plan.thinkingTokens + (plan.text === undefined ? 0 : countText(plan.text))
          )
        }
      )
    )
  })

  it("calls a tool when asked, by name or by 'use the tool', and answers a tool result with text", () => {
    assert.strictEqual(
      planReply(turn({ tools: [weather], lastUserText: "run get_weather" })).toolCall?.name,
      "get_weather"
    )
    assert.strictEqual(
      planReply(turn({ tools: [weather], lastUserText: "please use the tool" })).toolCall?.name,
      "get_weather"
    )
    assert.isUndefined(planReply(turn({ tools: [weather], lastUserText: "just chat" })).toolCall)
    assert.strictEqual(
      planReply(turn({ tools: [weather], toolMode: { _tag: "Required" } })).toolCall?.name,
      "get_weather"
    )
    assert.isUndefined(
      planReply(turn({ tools: [weather], toolMode: { _tag: "None" }, lastUserText: "call get_weather" })).toolCall
    )
    const answered = planReply(turn({ tools: [weather], lastUserText: "call get_weather", toolResult: "22C" }))
    assert.isUndefined(answered.toolCall)
    assert.include(answered.text!, "22C")
  })

  it("cuts at the earliest stop sequence", () => {
    const plan = planReply(turn({ stopSequences: ["there", "Hello"] }))
    assert.strictEqual(plan.text, "Echo: ")
    assert.strictEqual(plan.stopSequence, "Hello")
    assert.strictEqual(plan.finish, "stop_sequence")
  })
})

const richSchema = {
  type: "object",
  properties: {
    city: { type: "string" },
    when: { type: "string", format: "date-time" },
    count: { type: "integer", minimum: 5, maximum: 9 },
    ratio: { type: "number", maximum: 1 },
    mode: { enum: ["fast", "slow"] },
    tags: { type: "array", items: { type: "string" }, minItems: 2 },
    nested: { type: "object", properties: { flag: { type: "boolean" } }, required: ["flag"] },
    maybe: { anyOf: [{ type: "null" }, { type: "integer" }] },
    optional: { type: "string" }
  },
  required: ["city", "when", "count", "ratio", "mode", "tags", "nested", "maybe"]
}

describe("tool arguments", () => {
  it("fill the required properties with values the schema accepts, plausible by name", () => {
    const plan = planReply(turn({ tools: [{ name: "lookup", schema: richSchema }], toolMode: { _tag: "Required" } }))
    const args = plan.toolCall!.arguments
    assertMatchesSchema(richSchema, args)
    assert.deepStrictEqual(Object.keys(args), richSchema.required)
    assert.strictEqual(args.city, "Paris")
  })

  it("accept Gemini's upper-case types and schemas without required", () => {
    const schema = { type: "OBJECT", properties: { city: { type: "STRING" } } }
    const plan = planReply(turn({ tools: [{ name: "lookup", schema }], toolMode: { _tag: "Required" } }))
    assert.deepStrictEqual(plan.toolCall!.arguments, { city: "Paris" })
  })
})

describe("structured output", () => {
  it("replies with compact JSON valid against the schema, counted as its tokens", () => {
    const plan = planReply(turn({ output: { _tag: "JsonSchema", schema: richSchema } }))
    const value = JSON.parse(plan.text!)
    assertMatchesSchema(richSchema, value)
    assert.includeMembers(Object.keys(value), Object.keys(richSchema.properties))
    assert.strictEqual(plan.text, JSON.stringify(value))
    assert.strictEqual(plan.outputTokens, countText(plan.text!))
    assert.strictEqual(plan.finish, "stop")
    assert.deepStrictEqual(planReply(turn({ output: { _tag: "JsonSchema", schema: richSchema } })), plan)
  })

  it("json_object without a schema replies with an object", () => {
    const plan = planReply(turn({ output: { _tag: "JsonObject" } }))
    assert.deepStrictEqual(JSON.parse(plan.text!), { reply: "Echo: Hello there" })
  })

  it("an enum output replies with one of its members as plain text", () => {
    const plan = planReply(turn({ output: { _tag: "Enum", schema: { type: "STRING", enum: ["yes", "no"] } } }))
    assert.include(["yes", "no"], plan.text)
  })

  it("a tool the request forces still wins over the output format", () => {
    const plan = planReply(
      turn({ output: { _tag: "JsonObject" }, tools: [weather], toolMode: { _tag: "Named", name: "get_weather" } })
    )
    assert.strictEqual(plan.finish, "tool_call")
  })

  it("max tokens cuts the JSON and reports length", () => {
    const plan = planReply(turn({ output: { _tag: "JsonSchema", schema: richSchema }, maxTokens: 5 }))
    assert.strictEqual(plan.finish, "length")
    assert.strictEqual(plan.outputTokens, 5)
  })
})

describe("thinking signatures", () => {
  it("verify only the exact text they signed", () => {
    const signature = signThinking("secret", "a thought")
    assert.isTrue(verifyThinking("secret", "a thought", signature))
    assert.isFalse(verifyThinking("secret", "a thought!", signature))
    assert.isFalse(verifyThinking("other", "a thought", signature))
    assert.isFalse(verifyThinking("secret", "a thought", ""))
  })
})
