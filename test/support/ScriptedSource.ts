/**
 * An async iterable for tests of what consumes one: it yields `items` in order, each `next()` already settled or
 * settled only after a timer (`ready[i] === false` for the i-th call, the one after the last item included), then ends
 * or, with `failAtEnd`, fails; it counts the calls of `return()`.
 */
export const scriptedSource = <A>(items: ReadonlyArray<A>, ready: ReadonlyArray<boolean>, failAtEnd?: Error) => {
  let index = 0
  let returned = 0
  const iterator: AsyncIterableIterator<A> = {
    [Symbol.asyncIterator]: () => iterator,
    next: () => {
      const at = index++
      const result = (): Promise<IteratorResult<A>> =>
        at < items.length
          ? Promise.resolve({ done: false, value: items[at] as A })
          : failAtEnd === undefined
            ? Promise.resolve({ done: true, value: undefined })
            : Promise.reject(failAtEnd)
      return ready[at] === false ? new Promise((resolve) => setTimeout(resolve, 1)).then(result) : result()
    },
    return: () => {
      returned += 1
      return Promise.resolve({ done: true, value: undefined })
    }
  }
  return { iterator, returned: () => returned }
}
