import { assert, describe, it } from "@effect/vitest"
import type { ChatRequest } from "../../../../src/plugins/text/convert/ChatIR.ts"
import { irToGeminiRequest } from "../../../../src/plugins/text/convert/gemini.ts"
import { geminiRequestToIR } from "../../../../src/plugins/text/convert/geminiRequestToIR.ts"
import { geminiResponseToIR, irToGeminiResponse } from "../../../../src/plugins/text/convert/geminiResponse.ts"
import { irToOpenAIRequest } from "../../../../src/plugins/text/convert/openai.ts"
import { openAIRequestToIR } from "../../../../src/plugins/text/convert/openaiRequestToIR.ts"
import { Result } from "effect"
import { failure, ok } from "./helpers.ts"

describe("irToGeminiRequest", () => {
  it("given an OpenAI two-turn tool conversation, when converted, then calls and responses pair by name and id", () => {
    const ir = ok(
      openAIRequestToIR({
        model: "gemini-2.5-flash",
        messages: [
          { role: "system", content: "Be brief." },
          {
            role: "user",
            content: [
              { type: "text", text: "What is this and the weather?" },
              { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }
            ]
          },
          {
            role: "assistant",
            content: "Checking.",
            reasoning_content: "think",
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo"}' } }
            ]
          },
          { role: "tool", tool_call_id: "call_1", content: "12°C" }
        ],
        tools: [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }],
        tool_choice: { type: "function", function: { name: "get_weather" } },
        max_completion_tokens: 300,
        stop: ["END"],
        temperature: 0.2,
        reasoning_effort: "low",
        response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } }
      })
    )
    assert.deepStrictEqual(ok(irToGeminiRequest(ir)), {
      systemInstruction: { parts: [{ text: "Be brief." }] },
      contents: [
        {
          role: "user",
          parts: [
            { text: "What is this and the weather?" },
            { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }
          ]
        },
        {
          role: "model",
          parts: [
            { text: "Checking." },
            { functionCall: { id: "call_1", name: "get_weather", args: { city: "Oslo" } } }
          ]
        },
        {
          role: "user",
          parts: [{ functionResponse: { id: "call_1", name: "get_weather", response: { result: "12°C" } } }]
        }
      ],
      tools: [{ functionDeclarations: [{ name: "get_weather", parametersJsonSchema: { type: "object" } }] }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["get_weather"] } },
      generationConfig: {
        temperature: 0.2,
        maxOutputTokens: 300,
        stopSequences: ["END"],
        responseMimeType: "application/json",
        responseJsonSchema: { type: "object" },
        thinkingConfig: { includeThoughts: true, thinkingBudget: 2048 }
      }
    })
  })

  it("given an http image URL, when converted, then it is a ConvertError (Gemini needs inline data)", () => {
    const ir: ChatRequest = {
      model: "g",
      system: [],
      tools: [],
      stream: false,
      messages: [{ role: "user", content: [{ type: "image", source: { kind: "url", url: "https://x/y.png" } }] }]
    }
    assert.strictEqual(failure(irToGeminiRequest(ir)).param, "messages.0.content.0")
  })
})

describe("Gemini responses", () => {
  const body = {
    candidates: [
      {
        content: {
          role: "model",
          parts: [
            { text: "Planning the call", thought: true },
            { text: "Here you go." },
            { functionCall: { name: "get_weather", args: { city: "Oslo" } }, thoughtSignature: "c2ln" }
          ]
        },
        finishReason: "STOP",
        index: 0
      }
    ],
    usageMetadata: {
      promptTokenCount: 270,
      candidatesTokenCount: 100,
      thoughtsTokenCount: 40,
      cachedContentTokenCount: 200,
      totalTokenCount: 410
    },
    modelVersion: "gemini-2.5-flash",
    responseId: "abc123"
  }

  it("given text, thought and a signed function call, when converted, then the call keeps its signature, the stop reason is tool_use and usage splits cache", () => {
    assert.deepStrictEqual(ok(geminiResponseToIR(body, { fallbackId: "x", fallbackModel: "y" })), {
      id: "abc123",
      model: "gemini-2.5-flash",
      content: [
        { type: "thinking", text: "Planning the call" },
        { type: "text", text: "Here you go." },
        { type: "tool_call", id: "call_0", name: "get_weather", input: { city: "Oslo" }, signature: "c2ln" }
      ],
      stopReason: "tool_use",
      usage: { inputTokens: 70, outputTokens: 140, cacheReadTokens: 200, cacheWriteTokens: 0, reasoningTokens: 40 }
    })
  })

  it("given finish reasons, when mapped, then MAX_TOKENS, SAFETY and a blocked prompt are told apart", () => {
    const stop = (candidates: unknown) =>
      ok(geminiResponseToIR({ candidates }, { fallbackId: "x", fallbackModel: "y" })).stopReason
    assert.strictEqual(stop([{ content: { parts: [{ text: "a" }] }, finishReason: "MAX_TOKENS" }]), "max_tokens")
    assert.strictEqual(stop([{ content: { parts: [] }, finishReason: "SAFETY" }]), "refusal")
    assert.strictEqual(stop([{ content: { parts: [] }, finishReason: "MALFORMED_FUNCTION_CALL" }]), "error")
    assert.strictEqual(stop([{ content: { parts: [] }, finishReason: "A_NEW_REASON" }]), "end_turn")
    assert.strictEqual(stop(undefined), "refusal")
  })

  it("given an IR response, when encoded for a Gemini client and read back, then it is the same", () => {
    const ir = ok(geminiResponseToIR(body, { fallbackId: "x", fallbackModel: "y" }))
    assert.deepStrictEqual(ok(geminiResponseToIR(irToGeminiResponse(ir), { fallbackId: "x", fallbackModel: "y" })), ir)
  })
})

describe("geminiRequestToIR", () => {
  it("given a function call answered twice (Gemini CLI resends a session's last answer on resume), then the first answer stands alone", () => {
    const response = { id: "c1", name: "read_file", response: { error: "no such file" } }
    const ir = ok(
      geminiRequestToIR(
        {
          contents: [
            { role: "user", parts: [{ text: "read it" }] },
            { role: "model", parts: [{ functionCall: { id: "c1", name: "read_file", args: { path: "a" } } }] },
            { role: "user", parts: [{ functionResponse: response }, { functionResponse: response }] },
            { role: "model", parts: [{ text: "It failed." }] },
            {
              role: "user",
              parts: [{ functionResponse: { ...response, response: { output: "late" } } }, { text: "again" }]
            }
          ]
        },
        { model: "g", stream: false }
      )
    )
    const results = ir.messages.flatMap((m) => (m.role === "tool" ? m.content : []))
    assert.deepStrictEqual(
      results.map((r) => [r.toolCallId, r.isError]),
      [["c1", true]]
    )
    // Every upstream protocol then takes it: one answer per call.
    assert.isTrue(Result.isSuccess(irToOpenAIRequest(ir)))
  })

  it("given a snake_case body with id-less calls, when converted, then responses pair with calls by name", () => {
    const ir = ok(
      geminiRequestToIR(
        {
          system_instruction: { parts: [{ text: "Be brief." }] },
          contents: [
            { role: "user", parts: [{ text: "Weather?" }, { inline_data: { mime_type: "image/jpeg", data: "/9j/" } }] },
            {
              role: "model",
              parts: [
                { text: "thinking...", thought: true },
                { function_call: { name: "get_weather", args: { city: "Oslo" } }, thoughtSignature: "c2ln" }
              ]
            },
            { role: "user", parts: [{ function_response: { name: "get_weather", response: { temp: 12 } } }] }
          ],
          tools: [
            { function_declarations: [{ name: "get_weather", parameters: { type: "OBJECT" } }] },
            { googleSearch: {} }
          ],
          tool_config: { function_calling_config: { mode: "ANY" } },
          generation_config: { max_output_tokens: 100, thinking_config: { thinking_level: "HIGH" } }
        },
        { model: "gemini-3-pro", stream: true }
      )
    )
    assert.deepStrictEqual(ir, {
      model: "gemini-3-pro",
      system: [{ type: "text", text: "Be brief." }],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Weather?" },
            { type: "image", source: { kind: "base64", mediaType: "image/jpeg", data: "/9j/" } }
          ]
        },
        {
          role: "assistant",
          content: [
            { type: "tool_call", id: "call_0", name: "get_weather", input: { city: "Oslo" }, signature: "c2ln" }
          ]
        },
        {
          role: "tool",
          content: [
            {
              type: "tool_result",
              toolCallId: "call_0",
              content: [{ type: "text", text: '{"temp":12}' }],
              isError: false
            }
          ]
        }
      ],
      tools: [{ name: "get_weather", parameters: { type: "object" } }],
      toolChoice: { type: "any" },
      maxTokens: 100,
      reasoning: { effort: "high" },
      stream: true
    })
  })

  it("given input Gemini cannot hand to another vendor, when converted, then a ConvertError names the param", () => {
    const ctx = { model: "g", stream: false }
    assert.strictEqual(
      failure(geminiRequestToIR({ contents: [], generationConfig: { candidateCount: 2 } }, ctx)).param,
      "generationConfig.candidateCount"
    )
    assert.strictEqual(
      failure(
        geminiRequestToIR(
          { contents: [{ role: "user", parts: [{ inlineData: { mimeType: "audio/wav", data: "UklG" } }] }] },
          ctx
        )
      ).param,
      "contents.0.parts.0"
    )
    assert.strictEqual(
      failure(
        geminiRequestToIR(
          { contents: [{ role: "user", parts: [{ functionResponse: { name: "f", response: {} } }] }] },
          ctx
        )
      ).param,
      "contents.0.parts.0"
    )
    assert.strictEqual(
      failure(geminiRequestToIR({ contents: [{ role: "system", parts: [] }] }, ctx)).param,
      "contents.0.role"
    )
  })
})
