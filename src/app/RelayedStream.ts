/**
 * A streamed chat reply's bytes for the client, as one pull: each read of the upstream's ready frames (`ReadyBatches`)
 * becomes one chunk of the client's protocol, the relay's closing text (or, when the upstream failed, its error
 * ending) the last. Plain code per read and a few Effect steps to wait for the next; the relay and the optional
 * storage step decide what the text is, this only orders reading, converting and ending.
 *
 * What the client sees, in order: the text of every read that converted to something, then the closing text (after
 * the upstream's end) or the error ending (after its failure, or a relay that threw); the stream itself then ends
 * without failure. An upstream not read to its end (the consumer stopped early, or the relay threw) is torn down with
 * `return()`, as `Stream.fromAsyncIterable` does: awaited when no read is pending, else only started (it may not
 * settle before that read does).
 */
import { Cause, Channel, Effect, Scope, Stream } from "effect"
import type * as Pull from "effect/Pull"
import type { SseFrame } from "../plugins/ModelPlugin.ts"

/** What the stream asks of the relay (`FrameRelay`): plain synchronous conversion. */
export interface Relay {
  readonly batch: (frames: ReadonlyArray<SseFrame>) => string
  readonly end: () => string
  readonly fail: (message: string) => string
}

/** The storage step of a stored reply: every text passes it before it is written (`DeliveredTurn.storeFinal`). */
export type StoreText = (text: string) => Effect.Effect<string>

export const UPSTREAM_FAILED = "the upstream stream failed before it finished"

type Read =
  | { readonly ok: true; readonly result: IteratorResult<ReadonlyArray<SseFrame>> }
  | { readonly ok: false; readonly error: unknown }

const encoder = new TextEncoder()

export const relayedStream = (
  batches: AsyncIterator<ReadonlyArray<SseFrame>>,
  relay: Relay,
  storeText: StoreText | undefined
): Stream.Stream<Uint8Array> =>
  Stream.fromChannel(
    Channel.fromTransform((_, scope) => {
      /** The upstream's frames: idle between reads, a read pending, or finished (ended or failed). */
      let upstream: "idle" | "reading" | "finished" = "idle"
      /** The last text was written: the closing text, or the error ending. */
      let ended = false

      const read = Effect.callback<Read>((resume) => {
        upstream = "reading"
        batches.next().then(
          (result) => {
            upstream = result.done === true ? "finished" : "idle"
            resume(Effect.succeed({ ok: true, result }))
          },
          (error: unknown) => {
            upstream = "finished"
            resume(Effect.succeed({ ok: false, error }))
          }
        )
      })

      /** The client's text for one read; the last one once the upstream ended, failed, or the relay threw. */
      const textOf = (read: Read): string => {
        try {
          if (!read.ok) {
            ended = true
            return relay.fail(UPSTREAM_FAILED)
          }
          if (read.result.done === true) {
            ended = true
            return relay.end()
          }
          return relay.batch(read.result.value)
        } catch {
          ended = true
          return relay.fail(UPSTREAM_FAILED)
        }
      }

      const pull: Pull.Pull<readonly [Uint8Array]> = Effect.suspend(() =>
        ended ? Cause.done() : Effect.flatMap(read, (r) => written(textOf(r)))
      )
      const chunkOrNext = (text: string) => (text.length > 0 ? Effect.succeed([encoder.encode(text)] as const) : pull)
      const written = (text: string) =>
        storeText === undefined ? chunkOrNext(text) : Effect.flatMap(storeText(text), chunkOrNext)

      // An upstream not read to its end (the client left, or the relay threw) is torn down.
      const stop = Effect.suspend(() => {
        if (upstream === "finished" || batches.return === undefined) return Effect.void
        if (upstream === "reading") return Effect.sync(() => void batches.return?.().catch(() => undefined))
        return Effect.promise(() => batches.return?.() ?? Promise.resolve(undefined))
      })
      return Effect.as(Scope.addFinalizer(scope, stop), pull)
    })
  )
