/** Prompt-cache affinity keys and conversation trails (src/app/routing/Affinity.ts). */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { affinityKey, conversationTrail } from "../../../src/app/routing/Affinity.ts"
import type { ChatRequest } from "../../../src/plugins/ModelPlugin.ts"

const request = (messages: ChatRequest["messages"], extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: "m",
  system: [{ type: "text", text: "be brief" }],
  messages,
  tools: [],
  stream: false,
  ...extra
})
const user = (text: string) => ({ role: "user" as const, content: [{ type: "text" as const, text }] })
const assistant = (text: string) => ({ role: "assistant" as const, content: [{ type: "text" as const, text }] })
const openai = { dialect: "openai", body: {} }

describe("Affinity", () => {
  it("each turn of a conversation continues the previous turn's whole prompt, and nothing else", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.string()), { minLength: 2, maxLength: 6 }), (turns) => {
        const messages: Array<ChatRequest["messages"][number]> = []
        let previous: string | undefined
        for (const [question, answer] of turns) {
          messages.push(user(question))
          const trail = conversationTrail("key-1", request(messages))
          assert.isDefined(trail)
          if (previous !== undefined) assert.include(trail?.continues, previous)
          assert.notInclude(trail?.continues ?? [], trail?.whole)
          // Another key's identical conversation is another conversation.
          assert.notStrictEqual(conversationTrail("key-2", request(messages))?.whole, trail?.whole)
          previous = trail?.whole
          messages.push(assistant(answer))
        }
      }),
      { numRuns: 200 }
    )
    assert.deepStrictEqual(conversationTrail("k", request([user("hi")]))?.continues, [])
  })

  it("keys a cacheable prompt by its leading text, an explicit cache key by itself, and short prompts not at all", () => {
    const long = request([user("x".repeat(5000))])
    assert.isUndefined(affinityKey("k", request([user("hi")]), openai, 10))
    assert.isString(affinityKey("k", long, openai, 1200))
    assert.strictEqual(
      affinityKey("k", long, openai, 1200),
      affinityKey("k", request([user(`${"x".repeat(5000)} and more`)]), openai, 1300)
    )
    assert.strictEqual(
      affinityKey("k", request([user("a")], { promptCacheKey: "c1" }), openai, 1),
      affinityKey("k", request([user("b")], { promptCacheKey: "c1" }), openai, 1)
    )
    const marked = {
      dialect: "anthropic",
      body: { system: [{ type: "text", text: "s", cache_control: { type: "ephemeral" } }] }
    }
    assert.isString(affinityKey("k", request([user("hi")]), marked, 10))
  })
})
