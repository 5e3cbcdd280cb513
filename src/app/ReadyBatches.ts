/**
 * Groups the items of an async iterable into the batches in which they became available: each batch is one item that
 * had to be waited for, followed by every item its iterator could hand over at once (already settled promises). An
 * upstream's SSE events that arrive in one network read thus travel on as one batch — one write to the client instead
 * of one per event — while nothing that has arrived is ever held back waiting for more.
 *
 * Errors keep their place: items gathered before a failing `next()` are delivered first, then the failure. `return()`
 * (a consumer that stops early) is passed on to the source, so an upstream body is torn down as before.
 *
 * An edge, like `adapters/upstream/ResponseBody.ts`: it speaks the promise-based async-iterator protocol of the source
 * (a plugin's `AsyncIterable` of SSE frames), so it is written with async/await rather than Effect.
 */

const NOT_READY: unique symbol = Symbol("not ready")
const notReady = Promise.resolve(NOT_READY)

type Settled<A> =
  | { readonly ok: true; readonly result: IteratorResult<A> }
  | { readonly ok: false; readonly error: unknown }

const settle = <A>(promise: Promise<IteratorResult<A>>): Promise<Settled<A>> =>
  promise.then(
    (result) => ({ ok: true, result }),
    (error: unknown) => ({ ok: false, error })
  )

/** Largest batch; a source that is always ready (an in-memory one) still yields now and then. */
export const MAX_BATCH = 256

export const readyBatches = <A>(source: AsyncIterable<A>): AsyncIterableIterator<ReadonlyArray<A>> => {
  const iterator = source[Symbol.asyncIterator]()
  /** A `next()` that was not ready when the last batch was handed over. */
  let pending: Promise<Settled<A>> | undefined
  /** A failure met after some items of a batch: reported by the call after the one that delivers them. */
  let failure: Settled<A> | undefined
  let finished = false

  const batches: AsyncIterableIterator<ReadonlyArray<A>> = {
    [Symbol.asyncIterator]: () => batches,
    async next(): Promise<IteratorResult<ReadonlyArray<A>>> {
      if (failure !== undefined && !failure.ok) {
        finished = true
        const { error } = failure
        failure = undefined
        throw error
      }
      if (finished) return { done: true, value: undefined }
      const first = await (pending ?? settle(iterator.next()))
      pending = undefined
      if (!first.ok) {
        finished = true
        throw first.error
      }
      if (first.result.done === true) {
        finished = true
        return { done: true, value: undefined }
      }
      const batch: Array<A> = [first.result.value]
      while (batch.length < MAX_BATCH) {
        const next = iterator.next()
        let ready: IteratorResult<A> | typeof NOT_READY
        try {
          // An already settled `next()` wins the race; one that still has to wait loses it to `notReady`.
          ready = await Promise.race([next, notReady])
        } catch (error) {
          failure = { ok: false, error }
          break
        }
        if (ready === NOT_READY) {
          pending = settle(next)
          break
        }
        if (ready.done === true) {
          finished = true
          break
        }
        batch.push(ready.value)
      }
      return { done: false, value: batch }
    },
    async return(): Promise<IteratorResult<ReadonlyArray<A>>> {
      finished = true
      pending = undefined
      failure = undefined
      await iterator.return?.()
      return { done: true, value: undefined }
    }
  }
  return batches
}
