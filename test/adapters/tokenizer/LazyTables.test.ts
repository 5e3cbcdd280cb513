/**
 * The o200k tables are loaded by the first count, not by importing the tokenizer (src/adapters/tokenizer/Tokenizer.ts):
 * checked in a fresh process, where nothing else has counted yet.
 */
import { assert, describe, it } from "@effect/vitest"
import { inFreshProcess } from "../../support/FreshProcess.ts"

const script = `
import { createRequire } from "node:module"
const { countText } = await import("./src/adapters/tokenizer/Tokenizer.ts")
const cache = createRequire(import.meta.url).cache
const tables = () => Object.keys(cache).filter((path) => path.includes("gpt-tokenizer") && path.includes("o200k_base")).length
const before = tables()
const text = "The gateway starts without the tokenizer's tables."
const count = countText(text)
const after = tables()
const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base")
console.log(JSON.stringify({ before, after, count, library: countTokens(text) }))
`

describe("the tokenizer's tables", () => {
  it("are loaded by the first count, not at import", { timeout: 60_000 }, () => {
    const result = inFreshProcess<Record<string, number>>(script)
    assert.strictEqual(result.before, 0)
    assert.isAbove(result.after, 0)
    assert.isAbove(result.count, 0)
    assert.strictEqual(result.count, result.library)
  })
})
