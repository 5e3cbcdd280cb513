import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { Effect } from "effect"
import { formulaTokens, imageTokensForHold, parseSize } from "../../../src/plugins/dedicated-image/ImageTokens.ts"
import { dedicatedImagePricing } from "../../../src/plugins/dedicated-image/DedicatedImagePlugin.ts"
import { encodeMultipart } from "../../../src/plugins/dedicated-image/Multipart.ts"
import type { ImageRequest, PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import { gptImageOutputTokens } from "../../../src/adapters/simulator/images/ImageTokens.ts"

const model: PluginModel = {
  id: "imggen-2",
  upstreams: [],
  upstreamModel: "gpt-image-2",
  pricing: { input: 5_000_000n, output: 40_000_000n },
  maxOutputTokens: 4096
}

const request = (overrides: Partial<ImageRequest> = {}): ImageRequest => ({
  prompt: "a cat",
  n: 1,
  images: [],
  ...overrides
})

describe("dedicated image pricing", () => {
  it("matches OpenAI's published gpt-image-2 token table", () => {
    const table: ReadonlyArray<[string, "low" | "medium" | "high", number]> = [
      ["1024x1024", "low", 196],
      ["1024x1024", "medium", 1756],
      ["1024x1024", "high", 7024],
      ["1536x1024", "high", 5488],
      ["1024x1536", "medium", 1372],
      ["2560x1440", "high", 7370],
      ["3840x2160", "low", 371],
      ["3840x2160", "high", 13342]
    ]
    for (const [size, quality, tokens] of table) {
      assert.strictEqual(formulaTokens(quality, parseSize(size)!), tokens, `${quality} ${size}`)
    }
  })

  it("holds at least what the upstream can report, auto as high 1024x1024", () => {
    assert.strictEqual(imageTokensForHold(undefined, "auto"), 7024)
    assert.strictEqual(imageTokensForHold("auto", undefined), 7024)
    assert.strictEqual(imageTokensForHold("1024x1024", "low"), 272, "the larger of the two published tables")
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 240 }),
        fc.integer({ min: 1, max: 240 }),
        fc.constantFrom("low" as const, "medium" as const, "high" as const),
        (w, h, quality) => {
          const size = { width: w * 16, height: h * 16 }
          const held = imageTokensForHold(`${size.width}x${size.height}`, quality)
          assert.isAtLeast(held, gptImageOutputTokens("gpt-image-2", quality, size))
        }
      )
    )
  })

  it("charges low quality several times less than high, and n images n times", () => {
    const low = dedicatedImagePricing.estimate(
      { operation: "generate", request: request({ quality: "low" }), promptTokens: 3 },
      model
    )
    const high = dedicatedImagePricing.estimate(
      { operation: "generate", request: request({ quality: "high" }), promptTokens: 3 },
      model
    )
    assert.isAbove(Number(high) / Number(low), 5)
    const four = dedicatedImagePricing.estimate(
      { operation: "generate", request: request({ quality: "high", n: 4 }), promptTokens: 0 },
      model
    )
    assert.strictEqual(
      four,
      4n *
        dedicatedImagePricing.estimate(
          { operation: "generate", request: request({ quality: "high" }), promptTokens: 0 },
          model
        )
    )
  })

  it("prices usage per output token plus input tokens, rounded up to the micro-dollar", () => {
    const usage = { inputTokens: 3, inputTextTokens: 3, inputImageTokens: 0, outputTokens: 196, estimated: false }
    // 196 × 40 = 7840 micros; 3 × 5 = 15 micros.
    assert.strictEqual(dedicatedImagePricing.price(usage, model), 7_855n)
    assert.strictEqual(
      dedicatedImagePricing.price({ ...usage, inputTokens: 0 }, { ...model, pricing: { output: 40_000_000n } }),
      7_840n
    )
  })
})

describe("multipart encoding", () => {
  it.effect("round-trips through a standard multipart parser", () =>
    Effect.gen(function* () {
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255])
      const form = encodeMultipart([
        { _tag: "Field", name: "prompt", value: 'a "quoted"\r\nprompt' },
        { _tag: "Field", name: "n", value: "2" },
        { _tag: "File", name: "image[]", filename: "a.png", contentType: "image/png", data: png },
        { _tag: "File", name: "image[]", filename: "b.png", contentType: "image/png", data: png }
      ])
      const parsed = yield* Effect.promise(() =>
        new Response(Buffer.from(form.body), { headers: { "content-type": form.contentType } }).formData()
      )
      assert.strictEqual(parsed.get("prompt"), 'a "quoted"\r\nprompt')
      assert.strictEqual(parsed.get("n"), "2")
      const files = parsed.getAll("image[]") as Array<File>
      assert.strictEqual(files.length, 2)
      assert.deepStrictEqual(new Uint8Array(yield* Effect.promise(() => files[0]!.arrayBuffer())), png)
      assert.strictEqual(files[1]?.type, "image/png")
    })
  )
})
