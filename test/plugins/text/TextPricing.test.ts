/**
 * The text family's price with prompt caching: for any usage split and any prices, the price is exactly the sum of
 * its parts (tokens grouped by price, each group rounded up once), each token is billed in exactly one part (a cached token at its cache price, never also at `input`),
 * a missing cache price falls back to `input` (1-hour writes to `cacheWrite` first), and the hold covers every usage
 * whose tokens it counted.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { costPerMillion } from "../../../src/domain/Money.ts"
import type { PluginModel } from "../../../src/plugins/ModelPlugin.ts"
import type { Usage } from "../../../src/plugins/text/convert/ChatIR.ts"
import { HELD_WEB_SEARCHES, priceParts, textPricing } from "../../../src/plugins/text/TextPricing.ts"

const price = fc.bigInt({ min: 0n, max: 100_000_000n })
const tokens = fc.nat({ max: 5_000_000 })

const model = (pricing: PluginModel["pricing"]): PluginModel => ({
  id: "m",
  upstreams: [],
  upstreamModel: "m",
  pricing,
  maxOutputTokens: 4096
})

const prices = fc.record(
  { input: price, output: price, cacheRead: price, cacheWrite: price, cacheWrite1h: price },
  { requiredKeys: ["input", "output"] }
)

const usage: fc.Arbitrary<Usage> = fc
  .record({
    inputTokens: tokens,
    outputTokens: tokens,
    cacheReadTokens: tokens,
    cacheWriteTokens: tokens,
    oneHour: tokens,
    reasoningTokens: tokens
  })
  .map(({ oneHour, ...u }) => ({ ...u, cacheWrite1hTokens: Math.min(oneHour, u.cacheWriteTokens) }))

describe("text pricing with prompt caching", () => {
  it("property: the price is the sum of its parts, each token in exactly one part at its own price", () => {
    fc.assert(
      fc.property(prices, usage, (pricing, u) => {
        const m = model(pricing)
        const parts = priceParts(u, m)
        assert.strictEqual(
          textPricing.price(u, m),
          parts.reduce((sum, part) => sum + costPerMillion(BigInt(part.tokens), part.perMillion), 0n)
        )
        // Every token counted once: the parts hold exactly the usage's tokens.
        const total = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens + u.outputTokens
        assert.strictEqual(
          parts.reduce((sum, part) => sum + part.tokens, 0),
          total
        )
        // And each at its own price: the exact (unrounded) price is the sum of tokens × their price.
        const input = pricing.input
        const cacheWrite = pricing.cacheWrite ?? input
        const oneHour = u.cacheWrite1hTokens ?? 0
        const exact =
          BigInt(u.inputTokens) * input +
          BigInt(u.cacheReadTokens) * (pricing.cacheRead ?? input) +
          BigInt(u.cacheWriteTokens - oneHour) * cacheWrite +
          BigInt(oneHour) * (pricing.cacheWrite1h ?? cacheWrite) +
          BigInt(u.outputTokens) * pricing.output
        assert.strictEqual(
          parts.reduce((sum, part) => sum + BigInt(part.tokens) * part.perMillion, 0n),
          exact
        )
      }),
      { numRuns: 500 }
    )
  })

  it("property: a cached token is never also billed at input (the double-billing bug)", () => {
    fc.assert(
      fc.property(prices, usage, tokens, (pricing, u, moved) => {
        // With free cache reads, tokens moved from plain input to cache reads stop costing anything.
        const m = model({ ...pricing, cacheRead: 0n })
        const cached = Math.min(moved, u.inputTokens)
        const after = textPricing.price(
          { ...u, inputTokens: u.inputTokens - cached, cacheReadTokens: u.cacheReadTokens + cached },
          m
        )
        assert.strictEqual(after, textPricing.price({ ...u, inputTokens: u.inputTokens - cached }, m))
      }),
      { numRuns: 500 }
    )
  })

  it("property: the hold covers any usage within the tokens it counted and the output cap", () => {
    fc.assert(
      fc.property(prices, usage, (pricing, u) => {
        const m = model(pricing)
        const counted = u.inputTokens + u.cacheReadTokens + u.cacheWriteTokens
        const request = { model: "m", system: [], messages: [], tools: [], stream: false, maxTokens: u.outputTokens }
        const estimate = textPricing.estimate({ request, inputTokens: counted }, m)
        assert.isTrue(textPricing.price(u, m) <= estimate, `${textPricing.price(u, m)} > ${estimate}`)
      }),
      { numRuns: 500 }
    )
  })

  it("without cache prices cached tokens cost what input does; with them, each its own", () => {
    const m = model({ input: 3_000_000n, output: 15_000_000n })
    const u = {
      inputTokens: 1_000,
      outputTokens: 100,
      cacheReadTokens: 10_000,
      cacheWriteTokens: 2_000,
      cacheWrite1hTokens: 500,
      reasoningTokens: 0
    }
    // One price on the input side: 13,000 tokens at 3.00, rounded once, as before cache prices existed.
    assert.strictEqual(textPricing.price(u, m), 39_000n + 1_500n)
    const cached = model({
      input: 3_000_000n,
      output: 15_000_000n,
      cacheRead: 300_000n,
      cacheWrite: 3_750_000n,
      cacheWrite1h: 6_000_000n
    })
    // Anthropic's published ratios: reads 0.1×, 5-minute writes 1.25×, 1-hour writes 2× the input price.
    assert.strictEqual(textPricing.price(u, cached), 3_000n + 3_000n + 5_625n + 3_000n + 1_500n)
  })
})

describe("hosted web search", () => {
  const request = (hosted: boolean) =>
    ({
      model: "m",
      system: [],
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      tools: [],
      stream: false,
      ...(hosted ? { hostedTools: [{ param: "tools.0", type: "web_search" }] } : {})
    }) as const

  it("each search costs webSearch on top of the tokens; a request offering search holds for HELD_WEB_SEARCHES", () => {
    fc.assert(
      fc.property(prices, price, usage, fc.nat({ max: 20 }), (p, perSearch, u, searches) => {
        const priced = model({ ...p, webSearch: perSearch })
        const tokensOnly = textPricing.price(u, priced)
        assert.strictEqual(
          textPricing.price({ ...u, webSearches: searches }, priced),
          tokensOnly + BigInt(searches) * perSearch
        )
        const held = textPricing.estimate({ request: request(true), inputTokens: 10 }, priced)
        const plain = textPricing.estimate({ request: request(false), inputTokens: 10 }, priced)
        assert.strictEqual(held - plain, BigInt(HELD_WEB_SEARCHES) * perSearch)
        // Without a webSearch price a search costs nothing.
        assert.strictEqual(textPricing.price({ ...u, webSearches: searches }, model(p)), textPricing.price(u, model(p)))
      })
    )
  })
})
