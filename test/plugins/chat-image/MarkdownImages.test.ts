import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { markdownImage, splitMarkdownImages } from "../../../src/plugins/chat-image/MarkdownImages.ts"

const base64 = fc.base64String({ minLength: 4, maxLength: 400 }).filter((s) => s.length > 0)
const prose = fc.string({ maxLength: 80 }).filter((s) => !s.includes("!["))

describe("splitMarkdownImages", () => {
  it("finds inlined data-URI images between prose, in order", () => {
    const text = `Here you go.\n\n${markdownImage("image/png", "iVBORw0KGgo=")}\n\nAnd another:\n\n${markdownImage("image/jpeg", "/9j/4AAQ")}`
    assert.deepStrictEqual(splitMarkdownImages(text), [
      { _tag: "Text", text: "Here you go.\n\n" },
      { _tag: "Image", mimeType: "image/png", data: "iVBORw0KGgo=" },
      { _tag: "Text", text: "\n\nAnd another:\n\n" },
      { _tag: "Image", mimeType: "image/jpeg", data: "/9j/4AAQ" }
    ])
  })

  it("leaves links, non-image data URIs, non-base64 and unterminated images as text", () => {
    for (const text of [
      "![cat](https://example.com/cat.png)",
      "![doc](data:application/pdf;base64,JVBERi0=)",
      "![x](data:image/png,rawbytes)",
      "![x](data:image/png;base64,iVBORw0KGgo",
      "![x](data:image/png;base64,iVBOR w0KGgo=)",
      "just ![ text ] ( here )"
    ]) {
      assert.deepStrictEqual(splitMarkdownImages(text), [{ _tag: "Text", text }], text)
    }
  })

  it("round-trips any mix of prose and images", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            prose.map((text) => ({ text })),
            base64.map((data) => ({ data }))
          ),
          { maxLength: 8 }
        ),
        (pieces) => {
          const text = pieces.map((p) => ("text" in p ? p.text : markdownImage("image/png", p.data))).join("")
          const segments = splitMarkdownImages(text)
          assert.strictEqual(
            segments.map((s) => (s._tag === "Text" ? s.text : markdownImage(s.mimeType, s.data))).join(""),
            text
          )
          assert.deepStrictEqual(
            segments.flatMap((s) => (s._tag === "Image" ? [s.data] : [])),
            pieces.flatMap((p) => ("data" in p ? [p.data] : []))
          )
        }
      )
    )
  })

  it("stays linear on hostile input", () => {
    const hostile = [
      "![".repeat(200_000),
      `![${"a".repeat(300)}](data:image/png;base64,${"A".repeat(1_000_000)}`,
      `${"![x](data:image/png;base64,AAAA".repeat(50_000)}`,
      `![x](data:image/png;base64,${"A".repeat(4_000_000)})`
    ]
    for (const text of hostile) {
      const started = performance.now()
      splitMarkdownImages(text)
      assert.isBelow(performance.now() - started, 500, `${text.length} characters`)
    }
  })
})
