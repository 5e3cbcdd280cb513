import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Result } from "effect"
import {
  geminiBodyFromChat,
  geminiBodyFromNative,
  MAX_HISTORY_IMAGES
} from "../../../src/plugins/chat-image/GeminiImageRequest.ts"
import type { ImageFetcher } from "../../../src/plugins/chat-image/ImageInputs.ts"
import { markdownImage } from "../../../src/plugins/chat-image/MarkdownImages.ts"
import { type ChatCall, type PluginModel, pluginFailure } from "../../../src/plugins/ModelPlugin.ts"
import { openAIRequestToIR } from "../../../src/plugins/text/convert/openaiRequestToIR.ts"

// A real 1×1 PNG (sniffed as image/png).
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

const model: PluginModel = {
  id: "imgchat-2.5-flash-image",
  upstreams: [],
  upstreamModel: "gemini-2.5-flash-image",
  pricing: { perCall: 39_000n },
  maxOutputTokens: 8192
}

const noFetch: ImageFetcher = () => Effect.fail(pluginFailure("invalid_request", "no fetch"))

const call = (body: Record<string, unknown>): ChatCall => ({
  model,
  request: Result.getOrThrow(openAIRequestToIR({ model: model.id, ...body })),
  client: { dialect: "openai", body: { model: model.id, ...body } },
  requestId: "req_1",
  signal: new AbortController().signal
})

describe("Gemini request for chat-style image calls", () => {
  it.effect("turns an earlier reply's Markdown images into inlineData and keeps its caption", () =>
    Effect.gen(function* () {
      const body = yield* geminiBodyFromChat(
        call({
          messages: [
            { role: "system", content: "You draw." },
            { role: "user", content: "Generate an image: a cat" },
            { role: "assistant", content: `Here is your cat.\n\n${markdownImage("image/png", PNG)}` },
            { role: "user", content: "make it orange" }
          ],
          image_config: { aspect_ratio: "16:9" }
        }),
        noFetch
      )
      assert.deepStrictEqual(body.systemInstruction, { parts: [{ text: "You draw." }] })
      assert.deepStrictEqual(body.contents, [
        { role: "user", parts: [{ text: "Generate an image: a cat" }] },
        { role: "model", parts: [{ text: "Here is your cat." }, { inlineData: { mimeType: "image/png", data: PNG } }] },
        { role: "user", parts: [{ text: "make it orange" }] }
      ])
      assert.deepStrictEqual(body.generationConfig, {
        responseModalities: ["TEXT", "IMAGE"],
        imageConfig: { aspectRatio: "16:9" }
      })
    })
  )

  it.effect(
    `keeps only the newest ${MAX_HISTORY_IMAGES} images of earlier turns, and every image of the last one`,
    () =>
      Effect.gen(function* () {
        const messages = [
          ...Array.from({ length: 5 }, (_, i) => [
            { role: "user", content: `turn ${i}` },
            { role: "assistant", content: markdownImage("image/png", PNG) }
          ]).flat(),
          {
            role: "user",
            content: [
              { type: "text", text: "combine" },
              { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: "image_url", image_url: { url: `data:image/png;base64,${PNG}` } }
            ]
          }
        ]
        const body = yield* geminiBodyFromChat(call({ messages }), noFetch)
        const contents = body.contents as ReadonlyArray<{ role: string; parts: ReadonlyArray<Record<string, unknown>> }>
        const images = (c: { parts: ReadonlyArray<Record<string, unknown>> }) =>
          c.parts.filter((p) => p.inlineData).length
        assert.strictEqual(images(contents.at(-1)!), 4)
        assert.strictEqual(
          contents.slice(0, -1).reduce((n, c) => n + images(c), 0),
          MAX_HISTORY_IMAGES
        )
        assert.strictEqual(contents.at(-2)?.role, "model", "the newest earlier frame is kept")
      })
  )

  it.effect("refuses tools, in either dialect", () =>
    Effect.gen(function* () {
      const tools = [{ type: "function", function: { name: "f", parameters: { type: "object" } } }]
      const chat = yield* Effect.exit(
        geminiBodyFromChat(call({ messages: [{ role: "user", content: "x" }], tools }), noFetch)
      )
      assert.isTrue(Exit.isFailure(chat))
      const native = yield* Effect.exit(
        geminiBodyFromNative(
          { contents: [{ parts: [{ text: "x" }] }], tools: [{ functionDeclarations: [] }] },
          noFetch,
          new AbortController().signal
        )
      )
      assert.isTrue(Exit.isFailure(native))
    })
  )

  it.effect("keeps a Gemini client's body, adding image output only when not asked", () =>
    Effect.gen(function* () {
      const signal = new AbortController().signal
      const asked = { contents: [{ parts: [{ text: "x" }] }], generationConfig: { responseModalities: ["IMAGE"] } }
      assert.deepStrictEqual(yield* geminiBodyFromNative(asked, noFetch, signal), asked)
      const plain = yield* geminiBodyFromNative({ contents: [{ parts: [{ text: "x" }] }] }, noFetch, signal)
      assert.deepStrictEqual(plain.generationConfig, { responseModalities: ["TEXT", "IMAGE"] })
    })
  )
})
