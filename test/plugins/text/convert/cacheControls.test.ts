/**
 * Cache controls cross every conversion that can carry them and are dropped without an error where the target cannot:
 * OpenAI's `prompt_cache_key` between chat completions and the Responses API, Gemini's `cachedContent` to Gemini.
 * (Anthropic's `cache_control` blocks reach Anthropic untouched: an Anthropic client's body is passed through.)
 */
import { assert, describe, it } from "@effect/vitest"
import { irToAnthropicRequest } from "../../../../src/plugins/text/convert/anthropic.ts"
import { irToGeminiRequest } from "../../../../src/plugins/text/convert/gemini.ts"
import { geminiRequestToIR } from "../../../../src/plugins/text/convert/geminiRequestToIR.ts"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIRequestToIR } from "../../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { irToResponsesRequest } from "../../../../src/plugins/text/convert/responses.ts"
import { responsesRequestToIR } from "../../../../src/plugins/text/convert/responsesRequestToIR.ts"
import { ok } from "./helpers.ts"

describe("cache controls across protocols", () => {
  it("prompt_cache_key: chat completions ↔ Responses", () => {
    const fromChat = ok(
      openAIRequestToIR({ model: "m", messages: [{ role: "user", content: "hi" }], prompt_cache_key: "conv-1" })
    )
    assert.strictEqual(ok(irToResponsesRequest(fromChat)).prompt_cache_key, "conv-1")
    const fromResponses = ok(responsesRequestToIR({ model: "m", input: "hi", prompt_cache_key: "conv-2" }))
    assert.strictEqual(ok(irToOpenAIRequest(fromResponses)).prompt_cache_key, "conv-2")
  })

  it("cachedContent: Gemini to Gemini", () => {
    const ir = ok(
      geminiRequestToIR(
        { contents: [{ role: "user", parts: [{ text: "hi" }] }], cachedContent: "cachedContents/abc" },
        { model: "m", stream: false }
      )
    )
    assert.strictEqual(ok(irToGeminiRequest(ir)).cachedContent, "cachedContents/abc")
  })

  it("dropped without an error where the target has no such field", () => {
    const ir = ok(
      openAIRequestToIR({ model: "m", messages: [{ role: "user", content: "hi" }], prompt_cache_key: "conv-1" })
    )
    const anthropic = ok(irToAnthropicRequest({ ...ir, cachedContent: "cachedContents/abc" }, { defaultMaxTokens: 64 }))
    assert.notProperty(anthropic, "prompt_cache_key")
    assert.notProperty(anthropic, "cachedContent")
    assert.notProperty(ok(irToGeminiRequest(ir)), "prompt_cache_key")
    assert.notProperty(ok(irToOpenAIRequest({ ...ir, cachedContent: "cachedContents/abc" })), "cachedContent")
  })
})
