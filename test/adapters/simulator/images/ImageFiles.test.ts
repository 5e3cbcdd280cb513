import { assert, describe, it } from "@effect/vitest"
import { PNG } from "pngjs"
import {
  drawPng,
  fitLongEdge,
  readImageSize,
  sniffImageType
} from "../../../../src/adapters/simulator/images/ImageFiles.ts"
import { readMarkers, stripMarkers } from "../../../../src/adapters/simulator/images/ImageMarkers.ts"
import { geminiImageTokens, gptImageOutputTokens } from "../../../../src/adapters/simulator/images/ImageTokens.ts"

// Minimal headers of each format, enough for the size readers.
const jpegHeader = (width: number, height: number): Uint8Array =>
  Uint8Array.from([
    0xff,
    0xd8,
    0xff,
    0xe0,
    0x00,
    0x10,
    0x4a,
    0x46,
    0x49,
    0x46,
    0x00,
    0x01,
    0x01,
    0x00,
    0x00,
    0x01,
    0x00,
    0x01,
    0x00,
    0x00,
    0xff,
    0xc0,
    0x00,
    0x11,
    0x08,
    height >> 8,
    height & 0xff,
    width >> 8,
    width & 0xff,
    0x03,
    0x01,
    0x22,
    0x00
  ])

const webpHeader = (kind: "VP8X" | "VP8L", width: number, height: number): Uint8Array => {
  const bytes = new Uint8Array(30)
  bytes.set(Buffer.from("RIFF\0\0\0\0WEBP"), 0)
  bytes.set(Buffer.from(kind), 12)
  if (kind === "VP8X") {
    bytes.set(
      [(width - 1) & 0xff, ((width - 1) >> 8) & 0xff, 0, (height - 1) & 0xff, ((height - 1) >> 8) & 0xff, 0],
      24
    )
  } else {
    const bits = (width - 1) | ((height - 1) << 14)
    bytes.set([0x2f, bits & 0xff, (bits >> 8) & 0xff, (bits >> 16) & 0xff, (bits >>> 24) & 0xff], 20)
  }
  return bytes
}

const heicHeader = (width: number, height: number): Uint8Array => {
  const bytes = new Uint8Array(64)
  bytes.set(Buffer.from("\0\0\0\x18ftypheic"), 0)
  bytes.set(Buffer.from("\0\0\0\x14ispe\0\0\0\0"), 32)
  new DataView(bytes.buffer).setUint32(44, width)
  new DataView(bytes.buffer).setUint32(48, height)
  return bytes
}

describe("simulator image files", () => {
  it("draws a real PNG of the exact size, the same for the same seed", () => {
    const png = drawPng({ width: 300, height: 170 }, { seed: "a cat" })
    const decoded = PNG.sync.read(png)
    assert.strictEqual(decoded.width, 300)
    assert.strictEqual(decoded.height, 170)
    assert.isTrue(drawPng({ width: 300, height: 170 }, { seed: "a cat" }).equals(png))
    assert.isFalse(drawPng({ width: 300, height: 170 }, { seed: "a dog" }).equals(png))
    const transparent = PNG.sync.read(drawPng({ width: 64, height: 64 }, { seed: "x", transparent: true }))
    assert.isTrue(transparent.alpha)
    const noisy = drawPng({ width: 300, height: 170 }, { seed: "a cat", noisy: true })
    assert.isAbove(noisy.length, png.length * 3)
  })

  it("reads type and size from PNG, JPEG, WebP and HEIC headers", () => {
    const png = drawPng({ width: 40, height: 30 }, { seed: "s" })
    assert.strictEqual(sniffImageType(png), "image/png")
    assert.deepStrictEqual(readImageSize(png), { width: 40, height: 30 })
    assert.strictEqual(sniffImageType(jpegHeader(640, 480)), "image/jpeg")
    assert.deepStrictEqual(readImageSize(jpegHeader(640, 480)), { width: 640, height: 480 })
    assert.deepStrictEqual(readImageSize(webpHeader("VP8X", 1200, 800)), { width: 1200, height: 800 })
    assert.deepStrictEqual(readImageSize(webpHeader("VP8L", 300, 600)), { width: 300, height: 600 })
    assert.strictEqual(sniffImageType(heicHeader(4032, 3024)), "image/heic")
    assert.deepStrictEqual(readImageSize(heicHeader(4032, 3024)), { width: 4032, height: 3024 })
    assert.strictEqual(sniffImageType(Buffer.from("GIF89a......")), "image/gif")
    assert.isUndefined(readImageSize(Buffer.from("GIF89a......")))
    assert.isUndefined(readImageSize(Buffer.from("not an image")))
  })

  it("fits an aspect ratio to a long edge", () => {
    assert.deepStrictEqual(fitLongEdge(16 / 9, 1024), { width: 1024, height: 576 })
    assert.deepStrictEqual(fitLongEdge(3 / 4, 1024), { width: 768, height: 1024 })
    assert.deepStrictEqual(fitLongEdge(1, 2048), { width: 2048, height: 2048 })
  })

  it("counts output tokens per the vendors' published tables", () => {
    const table = (model: string) =>
      (["low", "medium", "high"] as const).map((quality) =>
        [
          { width: 1024, height: 1024 },
          { width: 1024, height: 1536 },
          { width: 1536, height: 1024 }
        ].map((size) => gptImageOutputTokens(model, quality, size))
      )
    assert.deepStrictEqual(table("gpt-image-1"), [
      [272, 408, 400],
      [1056, 1584, 1568],
      [4160, 6240, 6208]
    ])
    assert.deepStrictEqual(table("imggen-2"), [
      [196, 158, 158],
      [1756, 1372, 1372],
      [7024, 5488, 5488]
    ])
    assert.deepStrictEqual(
      (["low", "medium", "high"] as const).map((q) =>
        gptImageOutputTokens("gpt-image-2", q, { width: 3840, height: 2160 })
      ),
      [371, 3336, 13342]
    )
    assert.strictEqual(gptImageOutputTokens("gpt-image-2", "high", { width: 2560, height: 1440 }), 7370)
    assert.strictEqual(geminiImageTokens("imgchat-2.5-flash-image", undefined), 1290)
    assert.strictEqual(geminiImageTokens("imgchat-3-pro-image-preview", "2K"), 1120)
    assert.strictEqual(geminiImageTokens("imgchat-3-pro-image-preview", "4K"), 2000)
  })

  it("reads prompt markers", () => {
    const markers = readMarkers("draw [sim:images=3] a cat [sim:noisy]")
    assert.strictEqual(markers.images, 3)
    assert.isTrue(markers.noisy)
    assert.isFalse(markers.textOnly)
    assert.strictEqual(readMarkers("[sim:images=99]").images, 8)
    assert.strictEqual(readMarkers("[sim:image-safety]").finishReason, "IMAGE_SAFETY")
    assert.strictEqual(readMarkers("[SIM:SAFETY]").finishReason, "SAFETY")
    assert.isTrue(readMarkers("x [sim:moderation]").moderation)
    assert.strictEqual(stripMarkers("draw [sim:images=3]  a cat"), "draw a cat")
  })
})
