/**
 * `truncation: "auto"` as a pure rule, property-tested: what is kept fits the budget (or is all that may not be
 * dropped), keeps its order, keeps every instruction and the newest item, drops only from the oldest end, and never
 * keeps a function call's output without its call.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { truncateOldest } from "../../../src/app/responses/TurnHistory.ts"

type Item = Record<string, unknown> & { readonly n: number }

const item = fc.oneof(
  fc.constant({ type: "message", role: "user" }),
  fc.constant({ type: "message", role: "assistant" }),
  fc.constant({ type: "message", role: "developer" }),
  fc.constant({ type: "reasoning" }),
  fc.integer({ min: 0, max: 3 }).map((c) => ({ type: "function_call", call_id: `c${c}` })),
  fc.integer({ min: 0, max: 3 }).map((c) => ({ type: "function_call_output", call_id: `c${c}` }))
)

const conversation = fc
  .array(fc.tuple(item, fc.integer({ min: 1, max: 50 })), { minLength: 1, maxLength: 30 })
  .map((entries) => ({
    items: entries.map(([fields], n): Item => ({ ...fields, n })),
    tokens: entries.map(([, tokens]) => tokens)
  }))

const isInstruction = (i: Item) => i.type === "message" && (i.role === "developer" || i.role === "system")

describe("truncateOldest", () => {
  it("fits the budget, dropping only the oldest droppable items, never an output without its call", () => {
    fc.assert(
      fc.property(conversation, fc.integer({ min: 0, max: 800 }), ({ items, tokens }, budget) => {
        const kept = truncateOldest(items, tokens, budget) as ReadonlyArray<Item>
        const keptN = kept.map((i) => i.n)
        assert.deepStrictEqual(
          keptN,
          [...keptN].sort((a, b) => a - b),
          "order kept"
        )
        assert.strictEqual(kept.at(-1)?.n, items.at(-1)?.n, "the newest item stays")
        for (const i of items) if (isInstruction(i)) assert.include(keptN, i.n, "instructions stay")
        const total = kept.reduce((sum, i) => sum + (tokens[i.n] ?? 0), 0)
        const newest = items.at(-1) as Item
        const answers = (i: Item) =>
          newest.type === "function_call_output" && i.type === "function_call" && i.call_id === newest.call_id
        const undroppable = items.filter((i, index) => isInstruction(i) || index === items.length - 1 || answers(i))
        const floor = undroppable.reduce((sum, i) => sum + (tokens[i.n] ?? 0), 0)
        assert.isTrue(total <= Math.max(budget, floor), `${total} tokens kept for a budget of ${budget}`)
        const droppedCalls = new Set(
          items.filter((i) => !keptN.includes(i.n) && i.type === "function_call").map((i) => i.call_id)
        )
        for (const i of kept) {
          if (i.type === "function_call_output")
            assert.isFalse(droppedCalls.has(i.call_id), "an output without its call")
        }
        // What was dropped (other than outputs of dropped calls) is older than anything droppable that was kept.
        const firstKept = kept.find((i) => !isInstruction(i) && !answers(i))?.n ?? Number.POSITIVE_INFINITY
        for (const i of items) {
          if (keptN.includes(i.n) || isInstruction(i) || answers(i) || i.type === "function_call_output") continue
          assert.isBelow(i.n, firstKept, "only the oldest are dropped")
        }
      })
    )
  })

  it("keeps everything that already fits", () => {
    const items = [
      { type: "message", role: "user" },
      { type: "message", role: "assistant" }
    ]
    assert.strictEqual(truncateOldest(items, [10, 10], 20), items)
  })
})
