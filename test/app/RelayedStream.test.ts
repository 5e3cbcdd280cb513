import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import fc from "fast-check"
import { type Relay, relayedStream, UPSTREAM_FAILED } from "../../src/app/RelayedStream.ts"
import type { SseFrame } from "../../src/plugins/ModelPlugin.ts"
import { scriptedSource } from "../support/ScriptedSource.ts"

/** Reads of an upstream, each a batch of frames (their data), ready at once unless `ready` says not; then the end or `failure`. */
const upstream = (reads: ReadonlyArray<ReadonlyArray<string>>, ready: ReadonlyArray<boolean>, failure?: Error) =>
  scriptedSource(
    reads.map((read) => read.map((data): SseFrame => ({ data }))),
    ready,
    failure
  )

/** A relay whose client text is the frames' data joined; "" converts to nothing, as a dropped usage chunk does. */
const relay: Relay = {
  batch: (frames) => frames.map((frame) => frame.data).join(""),
  end: () => "<end>",
  fail: (message) => `<fail: ${message}>`
}

const decoder = new TextDecoder()
const texts = (stream: Stream.Stream<Uint8Array>) =>
  Effect.map(Stream.runCollect(stream), (chunks) => Array.from(chunks, (chunk) => decoder.decode(chunk)))

describe("relayedStream", () => {
  it("writes each read that converted to something, in order, then the closing text or the error ending", () =>
    fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(fc.constantFrom("", "a", "bc", "d"), { maxLength: 4 }), { maxLength: 12 }),
        fc.array(fc.boolean(), { maxLength: 13 }),
        fc.boolean(),
        async (reads, ready, fails) => {
          const source = upstream(reads, ready, fails ? new Error("cut") : undefined)
          const written = await Effect.runPromise(texts(relayedStream(source.iterator, relay, undefined)))
          const converted = reads.map((read) => read.join("")).filter((text) => text.length > 0)
          expect(written).toEqual([...converted, fails ? `<fail: ${UPSTREAM_FAILED}>` : "<end>"])
          // The stream read the upstream to its end: nothing to tear down.
          expect(source.returned()).toBe(0)
        }
      ),
      { numRuns: 200 }
    ))

  it("ends with the error ending when the relay throws, reads no further and tears the upstream down", async () => {
    const source = upstream([["a"], ["boom"], ["c"]], [])
    const throwing: Relay = {
      ...relay,
      batch: (frames) => {
        if (frames.some((frame) => frame.data === "boom")) throw new Error("a converter bug")
        return relay.batch(frames)
      }
    }
    const written = await Effect.runPromise(texts(relayedStream(source.iterator, throwing, undefined)))
    expect(written).toEqual(["a", `<fail: ${UPSTREAM_FAILED}>`])
    // The upstream was not read to its end: it is torn down.
    expect(source.returned()).toBe(1)
  })

  it("passes every text, empty ones included, through the storage step before it is written", async () => {
    const seen: Array<string> = []
    const store = (text: string) =>
      Effect.sync(() => {
        seen.push(text)
        return text === "<end>" ? "<stored end>" : text
      })
    const written = await Effect.runPromise(
      texts(relayedStream(upstream([["a"], [""], ["b"]], [false]).iterator, relay, store))
    )
    expect(seen).toEqual(["a", "", "b", "<end>"])
    expect(written).toEqual(["a", "b", "<stored end>"])
  })

  it("passes return() on to the upstream when the consumer stops between reads", async () => {
    const source = upstream([["a"], ["b"], ["c"]], [false, false, false])
    const written = await Effect.runPromise(
      texts(relayedStream(source.iterator, relay, undefined).pipe(Stream.take(1)))
    )
    expect(written).toEqual(["a"])
    expect(source.returned()).toBe(1)
  })

  it("starts return() without waiting when the consumer leaves during a read that never settles", async () => {
    let returned = 0
    const stalled: AsyncIterator<ReadonlyArray<SseFrame>> = {
      next: () => new Promise(() => {}),
      // Like an async generator's, this return() would wait for the pending read: it must not be awaited.
      return: () => {
        returned += 1
        return new Promise(() => {})
      }
    }
    await Effect.runPromise(
      Effect.gen(function* () {
        const fiber = yield* Effect.forkChild(Stream.runDrain(relayedStream(stalled, relay, undefined)))
        yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(fiber)
      })
    )
    expect(returned).toBe(1)
  })
})
