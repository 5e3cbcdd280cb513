/**
 * The canonical JSON that event hashes are computed over, and that the writer now also stores: for any JSON value it
 * means the same as `JSON.stringify` whatever the order of its keys; and the writer's one-serialization hash equals the verifier's.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import { canonicalJson, eventHash, eventHashOfJson } from "../../../src/adapters/store/EventHash.ts"

/** The same value with every object's keys inserted in reverse order. */
const reversed = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(reversed)
  if (value === null || typeof value !== "object") return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).reverse()) {
    Object.defineProperty(out, key, {
      value: reversed((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true
    })
  }
  return out
}

describe("canonicalJson", () => {
  it("is valid JSON with the value JSON.stringify gives, independent of key order", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value)
        const parsed = JSON.parse(text)
        assert.deepStrictEqual(parsed, JSON.parse(JSON.stringify(value)))
        // Stable: what it wrote reads back to the same text (the verifier hashes what jsonb gives back).
        assert.strictEqual(canonicalJson(parsed), text)
        // Canonical: the same value with its keys in another order gives the same text.
        assert.strictEqual(canonicalJson(reversed(value)), text)
      })
    )
  })

  it("writes bigints as decimal strings, Dates as ISO strings, and skips undefined fields and functions", () => {
    assert.strictEqual(
      canonicalJson({ b: 12345678901234567890n, a: new Date(0), c: undefined, d: () => 1, e: [undefined, 1] }),
      '{"a":"1970-01-01T00:00:00.000Z","b":"12345678901234567890","e":[null,1]}'
    )
  })
})

describe("eventHashOfJson", () => {
  it("equals eventHash for any data and metadata", () => {
    fc.assert(
      fc.property(
        fc.option(fc.stringMatching(/^[0-9a-f]{64}$/), { nil: null }),
        fc.record({
          stream: fc.string(),
          position: fc.bigInt({ min: 1n, max: 2n ** 62n }).map(String),
          eventId: fc.uuid(),
          type: fc.string(),
          schemaVersion: fc.integer({ min: 1, max: 9 }),
          recordedAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString())
        }),
        fc.jsonValue(),
        fc.dictionary(fc.string(), fc.jsonValue()),
        (previous, fields, data, metadata) => {
          assert.strictEqual(
            eventHashOfJson(previous, fields, canonicalJson(data), canonicalJson(metadata)),
            eventHash(previous, { ...fields, data, metadata })
          )
        }
      )
    )
  })
})
