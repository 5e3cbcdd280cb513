/**
 * Polling a server started as a child process (test/smoke): until it answers `url` with a 2xx, or until it stops
 * answering at all.
 */

/** Resolves once `url` answers with a 2xx; throws at `deadline` with the child's output so far (`log`). */
export const untilAnswers = async (url: string, deadline: number, log: () => string = () => ""): Promise<void> => {
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(2_000) })).ok) return
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${url} did not answer in time; output:\n${log()}`)
}

/** Whether `url` stops answering (its port closed) before `deadline`. */
export const closesBy = async (url: string, deadline: number): Promise<boolean> => {
  while (Date.now() < deadline) {
    const answered = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      () => true,
      () => false
    )
    if (!answered) return true
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return false
}
