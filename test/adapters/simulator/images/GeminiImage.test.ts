import { assert, layer } from "@effect/vitest"
import { ApiError, type Content, GoogleGenAI, type Part } from "@google/genai"
import { Effect } from "effect"
import { PNG } from "pngjs"
import { drawPng } from "../../../../src/adapters/simulator/images/ImageFiles.ts"
import { Simulator } from "../../../../src/adapters/simulator/Simulator.ts"
import { countText } from "../../../../src/adapters/tokenizer/Tokenizer.ts"
import { countGeminiContents } from "../../../../src/adapters/tokenizer/ChatTally.ts"

const MODEL = "imgchat-2.5-flash-image"
const PRO = "imgchat-3-pro-image-preview"

const clientFor = (simulator: Simulator["Service"]) =>
  new GoogleGenAI({ apiKey: simulator.apiKey, httpOptions: { baseUrl: simulator.baseUrl } })

const imagesOf = (response: { candidates?: Array<{ content?: { parts?: Array<Part> } }> }) =>
  (response.candidates?.[0]?.content?.parts ?? []).flatMap((part) => {
    if (part.inlineData === undefined) return []
    assert.strictEqual(part.inlineData.mimeType, "image/png")
    return [PNG.sync.read(Buffer.from(part.inlineData.data!, "base64"))]
  })

const failure = <A>(promise: Promise<A>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error
  )

const generate = (sim: Simulator["Service"], model: string, contents: Array<Content>, config?: object) =>
  Effect.promise(() => clientFor(sim).models.generateContent({ model, contents, ...(config ? { config } : {}) }))

const inline = (png: Buffer, mimeType = "image/png") => ({ inlineData: { mimeType, data: png.toString("base64") } })

layer(Simulator.layer)("simulator answers Gemini image models with real PNGs", (it) => {
  it.effect("generateContent: a caption and one 1024x1024 PNG, deterministic per prompt, ~1290 tokens", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const contents: Array<Content> = [{ role: "user", parts: [{ text: "a red bicycle" }] }]
      const response = yield* generate(sim, MODEL, contents)
      const parts = response.candidates![0]!.content!.parts!
      assert.strictEqual(parts[0]!.text, "Here is your image: a red bicycle.")
      const [png] = imagesOf(response)
      assert.deepStrictEqual([png!.width, png!.height], [1024, 1024])
      assert.strictEqual(response.candidates![0]!.finishReason, "STOP")
      const usage = response.usageMetadata!
      assert.strictEqual(usage.promptTokenCount, countGeminiContents({ contents }))
      assert.strictEqual(usage.candidatesTokenCount, 1290 + countText(parts[0]!.text!))
      assert.strictEqual(usage.totalTokenCount, usage.promptTokenCount! + usage.candidatesTokenCount!)
      assert.deepStrictEqual(
        usage.candidatesTokensDetails!.map((detail) => [detail.modality as string, detail.tokenCount]),
        [
          ["IMAGE", 1290],
          ["TEXT", countText(parts[0]!.text!)]
        ]
      )
      const again = yield* generate(sim, MODEL, contents)
      assert.strictEqual(again.candidates![0]!.content!.parts![1]!.inlineData!.data, parts[1]!.inlineData!.data)
    })
  )

  it.effect("an input image's aspect ratio is kept; imageConfig.aspectRatio and imageSize win", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const input = drawPng({ width: 400, height: 300 }, { seed: "photo" })
      const edited = yield* generate(sim, MODEL, [{ role: "user", parts: [{ text: "add a hat" }, inline(input)] }])
      const [png] = imagesOf(edited)
      assert.deepStrictEqual([png!.width, png!.height], [1024, 768])
      assert.deepStrictEqual(
        edited.usageMetadata!.promptTokensDetails!.map((d) => d.modality as string),
        ["TEXT", "IMAGE"]
      )
      // Multi-turn: the image to edit is the model's previous reply.
      const followUp = yield* generate(sim, MODEL, [
        { role: "user", parts: [{ text: "draw a tower" }] },
        { role: "model", parts: [{ text: "Here." }, inline(drawPng({ width: 90, height: 160 }, { seed: "t" }))] },
        { role: "user", parts: [{ text: "make it taller" }] }
      ])
      const [tall] = imagesOf(followUp)
      assert.deepStrictEqual([tall!.width, tall!.height], [576, 1024])
      const wide = yield* generate(sim, PRO, [{ role: "user", parts: [{ text: "a panorama" }, inline(input)] }], {
        imageConfig: { aspectRatio: "16:9", imageSize: "2K" }
      })
      const [panorama] = imagesOf(wide)
      assert.deepStrictEqual([panorama!.width, panorama!.height], [2048, 1152])
      assert.strictEqual(wide.usageMetadata!.candidatesTokensDetails![0]!.tokenCount, 1120)
    })
  )

  it.effect("a JPEG input sets the aspect ratio; GIF or an unreadable image is a 400", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const jpeg = Buffer.from([
        0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x00, 0x02, 0x00, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01
      ])
      const fromJpeg = yield* generate(sim, MODEL, [
        { role: "user", parts: [{ text: "x" }, inline(jpeg, "image/jpeg")] }
      ])
      const [png] = imagesOf(fromJpeg)
      assert.deepStrictEqual([png!.width, png!.height], [1024, 512])
      const gif = yield* Effect.promise(() =>
        failure(
          clientFor(sim).models.generateContent({
            model: MODEL,
            contents: [{ role: "user", parts: [{ text: "x" }, inline(Buffer.from("GIF89a"), "image/gif")] }]
          })
        )
      )
      assert.instanceOf(gif, ApiError)
      assert.strictEqual((gif as ApiError).status, 400)
      assert.match((gif as ApiError).message, /Unsupported MIME type: image\/gif/)
      const broken = yield* Effect.promise(() =>
        failure(
          clientFor(sim).models.generateContent({
            model: MODEL,
            contents: [{ role: "user", parts: [{ text: "x" }, inline(Buffer.from("not a png"))] }]
          })
        )
      )
      assert.strictEqual((broken as ApiError).status, 400)
    })
  )

  it.effect("knobs: text-only, several images, SAFETY, IMAGE_SAFETY, prompt blocked", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const ask = (text: string) => generate(sim, MODEL, [{ role: "user", parts: [{ text }] }])
      const textOnly = yield* ask("a cat [sim:text-only]")
      assert.strictEqual(imagesOf(textOnly).length, 0)
      assert.match(textOnly.text!, /a cat/)
      assert.strictEqual(textOnly.candidates![0]!.finishReason, "STOP")
      assert.strictEqual(textOnly.usageMetadata!.candidatesTokenCount, countText(textOnly.text!))
      const three = yield* ask("a cat [sim:images=3]")
      assert.strictEqual(imagesOf(three).length, 3)
      assert.strictEqual(three.usageMetadata!.candidatesTokensDetails![0]!.tokenCount, 3 * 1290)
      const safety = yield* ask("a cat [sim:safety]")
      assert.strictEqual(safety.candidates![0]!.finishReason, "SAFETY")
      assert.isUndefined(safety.candidates![0]!.content)
      const imageSafety = yield* ask("a cat [sim:image-safety]")
      assert.strictEqual(imageSafety.candidates![0]!.finishReason, "IMAGE_SAFETY")
      const blocked = yield* ask("a cat [sim:blocked]")
      assert.isUndefined(blocked.candidates)
      assert.strictEqual(blocked.promptFeedback!.blockReason, "SAFETY")
      const textModality = yield* generate(sim, MODEL, [{ role: "user", parts: [{ text: "a cat" }] }], {
        responseModalities: ["TEXT"]
      })
      assert.strictEqual(imagesOf(textModality).length, 0)
    })
  )

  it.effect("streaming: caption text first, each image whole in one chunk, finish and usage on the last", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const chunks = yield* Effect.promise(async () => {
        const all = []
        const stream = await clientFor(sim).models.generateContentStream({
          model: MODEL,
          contents: "two boats [sim:images=2]"
        })
        for await (const chunk of stream) all.push(chunk)
        return all
      })
      const kinds = chunks.map((chunk) =>
        chunk.candidates![0]!.content!.parts!.map((part) => (part.inlineData ? "image" : "text")).join("+")
      )
      assert.deepStrictEqual(kinds.slice(-2), ["image", "image"])
      assert.isTrue(kinds.slice(0, -2).every((kind) => kind === "text"))
      assert.strictEqual(chunks.map((chunk) => chunk.text ?? "").join(""), "Here are 2 images: two boats.")
      const last = chunks.at(-1)!
      assert.strictEqual(last.candidates![0]!.finishReason, "STOP")
      assert.strictEqual(last.usageMetadata!.candidatesTokensDetails![0]!.tokenCount, 2580)
      assert.isUndefined(chunks[0]!.candidates![0]!.finishReason)
      assert.strictEqual(imagesOf(last)[0]!.width, 1024)
    })
  )

  it.effect("countTokens still answers for image models; bad keys get Gemini's error", () =>
    Effect.gen(function* () {
      const sim = yield* Simulator
      const counted = yield* Effect.promise(() =>
        clientFor(sim).models.countTokens({ model: MODEL, contents: "hello there" })
      )
      assert.isAbove(counted.totalTokens!, 0)
      const wrongKey = yield* Effect.promise(() =>
        failure(
          new GoogleGenAI({ apiKey: "nope", httpOptions: { baseUrl: sim.baseUrl } }).models.generateContent({
            model: MODEL,
            contents: "x"
          })
        )
      )
      assert.strictEqual((wrongKey as ApiError).status, 400)
      const response = yield* Effect.promise(() =>
        fetch(`${sim.baseUrl}/v1beta/models/${MODEL}:generateContent`, {
          method: "POST",
          headers: { authorization: `Bearer ${sim.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ contents: [{ parts: [{ text: "x" }] }] })
        })
      )
      assert.strictEqual(response.status, 200)
    })
  )
})
