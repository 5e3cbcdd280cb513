/**
 * Scrape-time reads for Prometheus gauges. prom-client collects a registry's gauges concurrently, each through its
 * own async `collect`; figures that come from one read (the store's snapshot, routing's status) should be read once
 * per scrape, by whichever gauge is collected first, with the others awaiting the same run.
 */
import { Effect } from "effect"

/** `read` run at most once at a time: a call while it runs awaits that run. */
export const oncePerScrape = (read: Effect.Effect<void>): (() => Promise<void>) => {
  let running: Promise<void> | undefined
  return () => {
    running ??= Effect.runPromise(read).finally(() => {
      running = undefined
    })
    return running
  }
}
