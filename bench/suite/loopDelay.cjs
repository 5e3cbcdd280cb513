/**
 * Preloaded into the server under test (`node --require bench/suite/loopDelay.cjs`) so the suite can read its
 * event-loop delay without the server exposing anything: every 500 ms one JSON line with the wall time and the
 * p50/p99/max delay (ms) of that interval is appended to BENCH_LOOP_DELAY_FILE.
 */
const { monitorEventLoopDelay } = require("node:perf_hooks")
const { appendFileSync } = require("node:fs")

const file = process.env.BENCH_LOOP_DELAY_FILE
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 5 })
  histogram.enable()
  const timer = setInterval(() => {
    const line = {
      t: Date.now(),
      p50: histogram.percentile(50) / 1e6,
      p99: histogram.percentile(99) / 1e6,
      max: histogram.max / 1e6
    }
    histogram.reset()
    appendFileSync(file, `${JSON.stringify(line)}\n`)
  }, 500)
  timer.unref()
}
