import { assert, describe, it } from "@effect/vitest"
import { evolve } from "../../../src/domain/ledger/LedgerAccount.ts"
import { initialState } from "../../../src/domain/ledger/LedgerState.ts"
import type { LedgerEvent } from "../../../src/domain/ledger/LedgerEvent.ts"
import { currentSchemaVersion, upcastLedgerEvent } from "../../../src/domain/ledger/Upcast.ts"
import { usageMetrics } from "../../../src/domain/ledger/UsageMetrics.ts"

/** A UsageRecalculated as version 1 of the gateway wrote it: no `metrics`. */
const v1 = {
  accountId: "a",
  holdId: "h",
  cost: "0.000100",
  captured: "0.000100",
  usage: { inputTokens: 12, outputTokens: 30, cacheReadTokens: 0 },
  at: "2026-01-01T00:00:00.000Z"
}

describe("event schema evolution", () => {
  it("UsageRecalculated is written in version 2; version 1 is upcast with metrics derived from its usage", () => {
    assert.strictEqual(currentSchemaVersion("UsageRecalculated"), 2)
    assert.strictEqual(currentSchemaVersion("HoldPlaced"), 1)
    const upcast = upcastLedgerEvent("UsageRecalculated", 1, v1) as Record<string, unknown>
    assert.deepStrictEqual(upcast.metrics, { inputTokens: 12, outputTokens: 30, images: 0, videoSeconds: 0 })
    assert.deepStrictEqual({ ...upcast, metrics: undefined }, { ...v1, metrics: undefined })
    // A current event passes through unchanged, and other types are never touched.
    const v2 = { ...v1, metrics: { inputTokens: 1, outputTokens: 2, images: 3, videoSeconds: 4 } }
    assert.strictEqual(upcastLedgerEvent("UsageRecalculated", 2, v2), v2)
    assert.strictEqual(upcastLedgerEvent("HoldPlaced", 1, v1), v1)
  })

  it("an upcast event folds like a current one", () => {
    const event = { type: "UsageRecalculated", data: upcastLedgerEvent("UsageRecalculated", 1, v1) } as LedgerEvent
    assert.doesNotThrow(() => evolve(initialState("a"), event))
  })

  it("metrics read every family's usage shape", () => {
    assert.deepStrictEqual(usageMetrics({ input_tokens: 5, output_tokens: 7, images: 2 }), {
      inputTokens: 5,
      outputTokens: 7,
      images: 2,
      videoSeconds: 0
    })
    assert.deepStrictEqual(usageMetrics({ videoTokens: "108900", reported: true, seconds: 5 }), {
      inputTokens: 0,
      outputTokens: 108_900,
      images: 0,
      videoSeconds: 5
    })
    assert.deepStrictEqual(usageMetrics(null), { inputTokens: 0, outputTokens: 0, images: 0, videoSeconds: 0 })
    assert.deepStrictEqual(usageMetrics({ inputTokens: -3, outputTokens: "x" }).inputTokens, 0)
  })
})
