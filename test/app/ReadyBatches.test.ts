import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { MAX_BATCH, readyBatches } from "../../src/app/ReadyBatches.ts"
import { scriptedSource as source } from "../support/ScriptedSource.ts"

const drain = async <A>(batches: AsyncIterable<ReadonlyArray<A>>) => {
  const seen: Array<ReadonlyArray<A>> = []
  try {
    for await (const batch of batches) seen.push(batch)
    return { seen, error: undefined }
  } catch (error) {
    return { seen, error }
  }
}

describe("readyBatches", () => {
  it("keeps every item, in order, and never yields an empty batch", () =>
    fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer(), { maxLength: 40 }),
        fc.array(fc.boolean(), { maxLength: 41 }),
        fc.boolean(),
        async (items, ready, fails) => {
          const failure = fails ? new Error("cut") : undefined
          const { seen, error } = await drain(readyBatches(source(items, ready, failure).iterator))
          expect(seen.flat()).toEqual(items)
          expect(seen.every((batch) => batch.length > 0)).toBe(true)
          expect(error).toBe(failure)
        }
      ),
      { numRuns: 200 }
    ))

  it("groups what is ready and starts a new batch at each wait", async () => {
    // Item 0 waits; 1 and 2 are ready; 3 waits; 4 is ready; the end is ready.
    const { seen } = await drain(readyBatches(source([0, 1, 2, 3, 4], [false, true, true, false, true, true]).iterator))
    expect(seen).toEqual([
      [0, 1, 2],
      [3, 4]
    ])
  })

  it("delivers the items gathered before a failure, then the failure", async () => {
    const failure = new Error("upstream cut")
    const { seen, error } = await drain(readyBatches(source(["a", "b"], [true, true, true], failure).iterator))
    expect(seen).toEqual([["a", "b"]])
    expect(error).toBe(failure)
  })

  it("bounds a batch from a source that is always ready", async () => {
    const items = Array.from({ length: MAX_BATCH * 2 + 1 }, (_, i) => i)
    const { seen } = await drain(readyBatches(source(items, []).iterator))
    expect(seen.map((batch) => batch.length)).toEqual([MAX_BATCH, MAX_BATCH, 1])
  })

  it("passes return() on to the source when the consumer stops early", async () => {
    const upstream = source([1, 2, 3], [false, false, false])
    for await (const batch of readyBatches(upstream.iterator)) {
      expect(batch).toEqual([1])
      break
    }
    expect(upstream.returned()).toBe(1)
  })
})
