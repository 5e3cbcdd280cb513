import { assert, describe, it } from "@effect/vitest"
import { withoutForeignSignatures } from "../../../src/plugins/text/TextPlugin.ts"
import { syntheticSignature } from "../../../src/plugins/text/convert/thinkingSignature.ts"

describe("an Anthropic client's history passed through to Anthropic", () => {
  it("loses the thinking blocks Anthropic did not sign, and only those", () => {
    const body = {
      model: "claude",
      messages: [
        { role: "user", content: "hi" },
        {
          role: "assistant",
          content: [
            {
              type: "thinking",
              thinking: "from a reasoning model",
              signature: syntheticSignature("from a reasoning model")
            },
            { type: "text", text: "hello" }
          ]
        },
        { role: "user", content: "and?" },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "mine", signature: "EqQBsigned" },
            { type: "text", text: "so" }
          ]
        }
      ]
    }
    const sent = withoutForeignSignatures(body)
    assert.deepStrictEqual(sent.messages, [
      body.messages[0],
      { role: "assistant", content: [{ type: "text", text: "hello" }] },
      body.messages[2],
      body.messages[3]
    ])
  })

  it("is the very same body when nothing is foreign", () => {
    const body = { model: "claude", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }] }
    assert.strictEqual(withoutForeignSignatures(body), body)
  })
})
