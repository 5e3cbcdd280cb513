import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import {
  checkBase64Image,
  type ImageFetcher,
  parseDataUri,
  resolveImageUrl,
  sniffImageType
} from "../../../src/plugins/chat-image/ImageInputs.ts"
import { pluginFailure } from "../../../src/plugins/ModelPlugin.ts"

const bytes = (...parts: ReadonlyArray<string | ReadonlyArray<number>>) =>
  new Uint8Array(parts.flatMap((p) => (typeof p === "string" ? [...Buffer.from(p, "latin1")] : [...p])))

const PNG = bytes([0x89], "PNG\r\n\u001a\n", [0, 0, 0, 13])
const GIF_B64 = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"

const noFetch: ImageFetcher = () => Effect.fail(pluginFailure("invalid_request", "no fetch"))

describe("input images", () => {
  it("sniffs the accepted types and the common refused ones", () => {
    assert.strictEqual(sniffImageType(PNG), "image/png")
    assert.strictEqual(sniffImageType(bytes([0xff, 0xd8, 0xff, 0xe0])), "image/jpeg")
    assert.strictEqual(sniffImageType(bytes("RIFF", [1, 2, 3, 4], "WEBPVP8 ")), "image/webp")
    assert.strictEqual(sniffImageType(bytes([0, 0, 0, 24], "ftypheic", [0, 0, 0, 0])), "image/heic")
    assert.strictEqual(sniffImageType(bytes([0, 0, 0, 24], "ftypmif1", [0, 0, 0, 0])), "image/heif")
    assert.strictEqual(sniffImageType(bytes([0, 0, 0, 24], "ftypavif")), "image/avif")
    assert.strictEqual(sniffImageType(Buffer.from(GIF_B64, "base64")), "image/gif")
    assert.strictEqual(sniffImageType(bytes("BM", [0, 0])), "image/bmp")
    assert.strictEqual(sniffImageType(bytes('<?xml version="1.0"?><svg xmlns="x"/>')), "image/svg+xml")
    assert.isUndefined(sniffImageType(bytes("hello")))
  })

  it("parses base64 data URIs only", () => {
    assert.deepStrictEqual(parseDataUri("data:image/PNG;base64,AAAA"), { mimeType: "image/png", data: "AAAA" })
    assert.isUndefined(parseDataUri("data:image/png,AAAA"))
    assert.isUndefined(parseDataUri("https://example.com/a.png"))
  })

  it.effect("refuses an unsupported type with a message naming it, whatever the label says", () =>
    Effect.gen(function* () {
      for (const label of ["image/gif", "image/png", undefined]) {
        const exit = yield* Effect.exit(checkBase64Image(label, GIF_B64, "input image 1"))
        assert.isTrue(Exit.isFailure(exit))
        const failure = Exit.isFailure(exit)
          ? (exit.cause.reasons[0] as unknown as { error: { message: string; reason: string } }).error
          : undefined
        assert.strictEqual(failure?.reason, "invalid_request")
        assert.include(failure?.message, "the mime type image/gif is not supported")
      }
    })
  )

  it.effect("takes the type from the bytes when the label is wrong but the type is accepted", () =>
    Effect.gen(function* () {
      const image = yield* checkBase64Image("image/jpeg", Buffer.from(PNG).toString("base64"), "x")
      assert.strictEqual(image.mimeType, "image/png")
    })
  )

  it.effect("refuses schemes other than http(s) and data", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(resolveImageUrl("file:///etc/passwd", "x", noFetch, new AbortController().signal))
      assert.isTrue(Exit.isFailure(exit))
    })
  )
})
