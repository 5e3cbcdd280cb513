import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import { planReply, type Turn } from "../../../src/adapters/simulator/Reply.ts"
import { signThinking, verifyThinking } from "../../../src/adapters/simulator/ThinkingSignature.ts"
import { objectFromSchema } from "../../../src/adapters/simulator/ToolArguments.ts"
import { countText } from "../../../src/adapters/tokenizer/Tokenizer.ts"

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

describe("objectFromSchema", () => {
  it("fills required properties with values that match the schema", () => {
    const args = objectFromSchema({
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
    })
    assert.deepStrictEqual(args, {
      city: "Paris",
      when: "2026-01-01T12:00:00Z",
      count: 6,
      ratio: 0.5,
      mode: "fast",
      tags: ["example", "example"],
      nested: { flag: true },
      maybe: 1
    })
  })

  it("accepts Gemini's upper-case types and schemas without required", () => {
    assert.deepStrictEqual(objectFromSchema({ type: "OBJECT", properties: { city: { type: "STRING" } } }), {
      city: "Paris"
    })
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
