import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { completionFromGemini, makeChunkMapper } from "../../../src/plugins/chat-image/GeminiImageReply.ts"

/** Wire JSON read loosely in assertions. */
// biome-ignore lint/suspicious/noExplicitAny: one alias for reading arbitrary wire JSON in assertions
type Wire = any

const ids = { id: "chatcmpl-1", model: "imgchat-2.5-flash-image", created: 1 }

const response = (parts: ReadonlyArray<unknown>, finishReason = "STOP") => ({
  candidates: [{ content: { role: "model", parts }, finishReason, index: 0 }],
  usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 1300, thoughtsTokenCount: 5, totalTokenCount: 1315 }
})

describe("Gemini image replies as chat completions", () => {
  it("puts the caption first and each image as a Markdown data URI, skipping thoughts", () => {
    const result = completionFromGemini(
      response([
        { text: "draft", thought: true },
        { inlineData: { mimeType: "image/png", data: "THOUGHT" }, thought: true },
        { text: "Here you go." },
        { inlineData: { mimeType: "image/png", data: "AAAA" } },
        { inlineData: { mimeType: "image/jpeg", data: "BBBB" } }
      ]),
      ids
    )
    assert.isTrue(Result.isSuccess(result))
    const body = Result.getOrThrow(result) as Wire
    assert.strictEqual(
      body.choices[0].message.content,
      "Here you go.\n\n![image](data:image/png;base64,AAAA)\n\n![image](data:image/jpeg;base64,BBBB)"
    )
    assert.strictEqual(body.choices[0].finish_reason, "stop")
    assert.deepStrictEqual(body.usage, {
      prompt_tokens: 10,
      completion_tokens: 1305,
      total_tokens: 1315,
      completion_tokens_details: { reasoning_tokens: 5 }
    })
  })

  it("maps safety stops to content_filter and MAX_TOKENS to length", () => {
    const filtered = Result.getOrThrow(completionFromGemini(response([], "IMAGE_SAFETY"), ids)) as Wire
    assert.strictEqual(filtered.choices[0].finish_reason, "content_filter")
    assert.strictEqual(filtered.choices[0].message.content, "")
    const cut = Result.getOrThrow(completionFromGemini(response([{ text: "a" }], "MAX_TOKENS"), ids)) as Wire
    assert.strictEqual(cut.choices[0].finish_reason, "length")
  })

  it("refuses a blocked prompt with a 400 that suggests rephrasing", () => {
    const result = completionFromGemini({ promptFeedback: { blockReason: "SAFETY" } }, ids)
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.strictEqual(result.failure.reason, "invalid_request")
      assert.match(result.failure.message, /rephras/)
    }
  })

  it("streams text as it comes and each image whole, then finish, usage and [DONE]", () => {
    const mapper = makeChunkMapper(ids)
    const frames = [
      ...mapper.push(JSON.stringify({ candidates: [{ content: { parts: [{ text: "Here " }] } }] })),
      ...mapper.push(JSON.stringify({ candidates: [{ content: { parts: [{ text: "it is." }] } }] })),
      ...mapper.push(
        JSON.stringify({
          candidates: [{ content: { parts: [{ inlineData: { mimeType: "image/png", data: "AAAA" } }] } }]
        })
      ),
      ...mapper.push(JSON.stringify(response([{ text: "Done." }]))),
      ...mapper.end()
    ]
    const data = frames.map((frame) => (frame.data === "[DONE]" ? "[DONE]" : JSON.parse(frame.data)))
    const contents = data.flatMap((d: Wire) =>
      d === "[DONE]" ? [] : d.choices.map((c: Wire) => c.delta.content ?? "")
    )
    assert.deepStrictEqual(contents, [
      "",
      "Here ",
      "it is.",
      "\n\n![image](data:image/png;base64,AAAA)",
      "\n\nDone.",
      ""
    ])
    assert.strictEqual(data.at(-3).choices[0].finish_reason, "stop")
    assert.deepStrictEqual(data.at(-2).choices, [])
    assert.strictEqual(data.at(-2).usage.completion_tokens, 1305)
    assert.strictEqual(data.at(-1), "[DONE]")
  })

  it("turns an in-band upstream error into an OpenAI error frame and stops", () => {
    const mapper = makeChunkMapper(ids)
    const frames = mapper.push(JSON.stringify({ error: { code: 500, message: "boom", status: "INTERNAL" } }))
    assert.strictEqual(JSON.parse(frames.at(-1)?.data ?? "{}").error.message, "boom")
    assert.deepStrictEqual(mapper.end(), [])
  })
})
