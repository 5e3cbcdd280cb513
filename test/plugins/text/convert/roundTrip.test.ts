import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { irToAnthropicRequest } from "../../../../src/plugins/text/convert/anthropic.ts"
import { anthropicRequestToIR } from "../../../../src/plugins/text/convert/anthropicRequestToIR.ts"
import { anthropicResponseToIR, irToAnthropicResponse } from "../../../../src/plugins/text/convert/anthropicResponse.ts"
import { irToGeminiRequest } from "../../../../src/plugins/text/convert/gemini.ts"
import { geminiRequestToIR } from "../../../../src/plugins/text/convert/geminiRequestToIR.ts"
import { geminiResponseToIR, irToGeminiResponse } from "../../../../src/plugins/text/convert/geminiResponse.ts"
import { irToOpenAIRequest, mentionsJson } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIRequestToIR } from "../../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { irToOpenAIResponse, openAIResponseToIR } from "../../../../src/plugins/text/convert/openaiResponse.ts"
import { JSON_OBJECT_INSTRUCTION } from "../../../../src/plugins/text/convert/json.ts"
import {
  anthropicRequest,
  anthropicResponse,
  geminiRequest,
  geminiResponse,
  openAIRequest,
  openAIResponse
} from "./arbitraries.ts"
import { ok } from "./helpers.ts"

/** The wire body goes through JSON, as it would on a socket. */
const wire = <A>(value: A): unknown => JSON.parse(JSON.stringify(value))

describe("round trips within each dialect's expressible subset", () => {
  it("property: IR → OpenAI request → IR is the identity", () => {
    fc.assert(
      fc.property(openAIRequest, (ir) => {
        const body = ok(irToOpenAIRequest(ir, { forceIncludeUsage: false }))
        // OpenAI refuses json_object unless a message says "json": the conversion adds one system line, nothing else.
        const expected =
          ir.responseFormat?.type === "json_object" && !mentionsJson(ir)
            ? { ...ir, system: [...ir.system, { type: "text" as const, text: JSON_OBJECT_INSTRUCTION }] }
            : ir
        assert.deepStrictEqual(ok(openAIRequestToIR(wire(body))), expected)
      }),
      { numRuns: 300 }
    )
  })

  it("property: IR → Anthropic request → IR is the identity", () => {
    fc.assert(
      fc.property(anthropicRequest, (ir) => {
        const body = ok(irToAnthropicRequest(ir, { defaultMaxTokens: 4096 }))
        assert.deepStrictEqual(ok(anthropicRequestToIR(wire(body))), ir)
      }),
      { numRuns: 300 }
    )
  })

  it("property: IR → Gemini request → IR is the identity", () => {
    fc.assert(
      fc.property(geminiRequest, (ir) => {
        const body = ok(irToGeminiRequest(ir))
        assert.deepStrictEqual(ok(geminiRequestToIR(wire(body), { model: ir.model, stream: ir.stream })), ir)
      }),
      { numRuns: 300 }
    )
  })

  it("property: IR → OpenAI response → IR is the identity", () => {
    fc.assert(
      fc.property(openAIResponse, (ir) => {
        const body = irToOpenAIResponse(ir, { created: 1760000000 })
        assert.deepStrictEqual(ok(openAIResponseToIR(wire(body))), ir)
      }),
      { numRuns: 300 }
    )
  })

  it("property: IR → Anthropic response → IR is the identity", () => {
    fc.assert(
      fc.property(anthropicResponse, (ir) => {
        assert.deepStrictEqual(ok(anthropicResponseToIR(wire(irToAnthropicResponse(ir)))), ir)
      }),
      { numRuns: 300 }
    )
  })

  it("property: IR → Gemini response → IR is the identity", () => {
    fc.assert(
      fc.property(geminiResponse, (ir) => {
        const back = ok(geminiResponseToIR(wire(irToGeminiResponse(ir)), { fallbackId: "x", fallbackModel: "y" }))
        assert.deepStrictEqual(back, ir)
      }),
      { numRuns: 300 }
    )
  })

  it("property: an OpenAI-expressible request survives a trip through Anthropic in what Anthropic can say", () => {
    fc.assert(
      fc.property(openAIRequest, (ir) => {
        const body = irToAnthropicRequest(ir, { defaultMaxTokens: 4096 })
        // Only unsupported image types may refuse; everything else converts.
        if (body._tag === "Failure") {
          assert.match(body.failure.message, /image type/)
          return
        }
        const back = ok(anthropicRequestToIR(wire(body.success)))
        // Assistant turns holding only unsigned reasoning have nothing Anthropic accepts and are dropped.
        const expressible = ir.messages.filter(
          (m) => m.role !== "assistant" || m.content.some((p) => p.type === "text" || p.type === "tool_call")
        )
        assert.deepStrictEqual(
          back.messages.map((m) => m.role),
          expressible.map((m) => m.role)
        )
        const calls = (messages: typeof ir.messages) =>
          messages.flatMap((m) => (m.role === "assistant" ? m.content.filter((p) => p.type === "tool_call") : []))
        assert.deepStrictEqual(calls(back.messages), calls(ir.messages))
      }),
      { numRuns: 200 }
    )
  })
})
