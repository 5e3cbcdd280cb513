import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { encode } from "gpt-tokenizer/encoding/o200k_base"
import {
  countText,
  IMAGE_TOKENS,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
  splitByTokens,
  truncateToTokens
} from "../../../src/adapters/tokenizer/Tokenizer.ts"
import {
  countAnthropicMessages,
  countGeminiContents,
  countOpenAIChat
} from "../../../src/adapters/tokenizer/ChatTally.ts"
import { TokenCounter } from "../../../src/app/ports/TokenCounter.ts"
import * as TokenCounterLive from "../../../src/adapters/tokenizer/TokenCounterLive.ts"

describe("countText (o200k_base)", () => {
  it("counts known strings", () => {
    assert.strictEqual(countText(""), 0)
    assert.strictEqual(countText("Hello, world!"), 4)
    assert.strictEqual(countText("The quick brown fox jumps over the lazy dog."), 10)
    assert.strictEqual(countText("user"), 1)
  })

  it("counts what encoding would give, for any text of ordinary length", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), (text) => {
        const encoded = encode(text, { disallowedSpecial: new Set() }).length
        return countText(text) === encoded
      }),
      { numRuns: 300 }
    )
  })

  it("treats special-token text as plain text instead of throwing", () => {
    assert.strictEqual(countText("hi <|endoftext|> there"), 9)
  })

  it("counts long ordinary text exactly as one encoding would", () => {
    const prose = "The quick brown fox, jumps over the lazy dog!\n".repeat(400)
    assert.strictEqual(countText(prose), encode(prose).length)
  })

  it("counts a megabyte without whitespace in linear time, over-estimating by at most one token per cut", () => {
    // One 5 MB pre-token would take minutes of BPE merges on the event loop (a request body can carry one).
    const run = "x".repeat(5_000_000)
    const tokens = countText(run)
    const cuts = Math.ceil(run.length / 256)
    assert.isAtLeast(tokens, encode("x".repeat(256)).length * (cuts - 1))
    assert.isAtMost(tokens, encode("x".repeat(256)).length * cuts + cuts)
  })

  it("is deterministic", () => {
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), (text) => countText(text) === countText([...text].join(""))))
  })
})

describe("truncateToTokens and splitByTokens", () => {
  it("truncates to a token budget", () => {
    const text = "The quick brown fox jumps over the lazy dog."
    assert.strictEqual(truncateToTokens(text, 100), text)
    assert.strictEqual(truncateToTokens(text, 0), "")
    assert.strictEqual(countText(truncateToTokens(text, 4)), 4)
    assert.isTrue(text.startsWith(truncateToTokens(text, 4)))
  })

  it("splits into pieces that join back to the text, multi-byte characters included", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 200 }), fc.integer({ min: 1, max: 6 }), (text, size) => {
        const pieces = splitByTokens(text, size)
        return pieces.join("") === text && pieces.every((piece) => !piece.includes("\uFFFD") || text.includes("\uFFFD"))
      })
    )
    assert.deepStrictEqual(splitByTokens("🦀🦀🦀 crab", 1).join(""), "🦀🦀🦀 crab")
  })
})

describe("request counting", () => {
  it("counts an OpenAI chat with per-message overhead and reply priming", () => {
    const tokens = countOpenAIChat({ messages: [{ role: "user", content: "Hello, world!" }] })
    assert.strictEqual(tokens, MESSAGE_OVERHEAD_TOKENS + 1 + 4 + REPLY_PRIMING_TOKENS)
  })

  it("charges a fixed cost per image part", () => {
    const text = { role: "user", content: [{ type: "text", text: "Hello, world!" }] }
    const withImage = {
      role: "user",
      content: [
        { type: "text", text: "Hello, world!" },
        { type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }
      ]
    }
    assert.strictEqual(countOpenAIChat({ messages: [withImage] }) - countOpenAIChat({ messages: [text] }), IMAGE_TOKENS)
    const anthropicImage = { type: "image", source: { type: "base64", media_type: "image/png", data: "AAAA" } }
    assert.strictEqual(
      countAnthropicMessages({ messages: [{ role: "user", content: [anthropicImage] }] }) -
        countAnthropicMessages({ messages: [{ role: "user", content: [] }] }),
      IMAGE_TOKENS
    )
  })

  it("counts tool calls, tool definitions and the Anthropic system prompt", () => {
    const base = countOpenAIChat({ messages: [{ role: "user", content: "hi" }] })
    const tools = [{ type: "function", function: { name: "get_weather", parameters: { type: "object" } } }]
    assert.isAbove(countOpenAIChat({ messages: [{ role: "user", content: "hi" }], tools }), base)
    const messages = [{ role: "user", content: "Hello, world!" }]
    assert.strictEqual(
      countAnthropicMessages({ messages, system: "Be brief." }) - countAnthropicMessages({ messages }),
      countText("Be brief.")
    )
    const toolUse = {
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "get_weather", input: { city: "Paris" } }]
    }
    assert.strictEqual(
      countAnthropicMessages({ messages: [toolUse] }),
      MESSAGE_OVERHEAD_TOKENS + countText("get_weather") + countText('{"city":"Paris"}') + REPLY_PRIMING_TOKENS
    )
  })

  it("counts Gemini contents and inline images", () => {
    const tokens = countGeminiContents({
      contents: [
        { role: "user", parts: [{ text: "Hello, world!" }, { inlineData: { mimeType: "image/png", data: "AA" } }] }
      ],
      systemInstruction: { parts: [{ text: "Be brief." }] }
    })
    assert.strictEqual(
      tokens,
      countText("Be brief.") + MESSAGE_OVERHEAD_TOKENS + 4 + IMAGE_TOKENS + REPLY_PRIMING_TOKENS
    )
  })

  it.effect("is available as the app's token-counting port", () =>
    Effect.gen(function* () {
      const tokens = yield* TokenCounter
      assert.strictEqual(tokens.count("Hello, world!"), 4)
      assert.strictEqual(yield* tokens.countMany(["Hello, world!", "Be brief."]), 4 + countText("Be brief."))
    }).pipe(Effect.provide(TokenCounterLive.layer))
  )
})
