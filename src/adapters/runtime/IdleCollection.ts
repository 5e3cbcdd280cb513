/**
 * One full garbage collection when the gateway goes quiet after work. Under load V8 grows its heap and keeps it:
 * after a burst the process stays ~100 MB above a fresh start however long it then idles, and the next burst grows
 * from there. So every `checkMillis` the process's own CPU time is read: once an interval used less than
 * `quietCpuMillis` and the intervals since the last collection used at least `workCpuMillis`, it collects once (tens
 * of milliseconds, when nothing is waiting). A steady trickle of requests is never quiet for a whole interval and
 * never collects; an idle process has done no work and never collects again. Measured in bench/README.md ("A
 * collection when the gateway goes quiet").
 */
import { Duration, Effect, Layer, Schedule } from "effect"
import { collectNow } from "./CollectGarbage.ts"

export interface IdleCollectionPolicy {
  readonly checkMillis: number
  /** An interval that used less CPU than this is quiet. */
  readonly quietCpuMillis: number
  /** How much CPU the process must have used since the last collection for a quiet interval to collect. */
  readonly workCpuMillis: number
}

export const DEFAULT_IDLE_COLLECTION: IdleCollectionPolicy = {
  checkMillis: 2_000,
  quietCpuMillis: 40,
  workCpuMillis: 1_000
}

/** CPU used since the last collection, in milliseconds (the quiet interval that collects is not counted). */
export type Work = number

/** Whether this interval collects, and the work carried to the next one. */
export const decideCollection = (
  policy: IdleCollectionPolicy,
  work: Work,
  intervalCpuMillis: number
): { readonly collect: boolean; readonly work: Work } =>
  intervalCpuMillis < policy.quietCpuMillis && work >= policy.workCpuMillis
    ? { collect: true, work: 0 }
    : { collect: false, work: work + intervalCpuMillis }

/**
 * The check as plain code over a CPU clock (milliseconds of CPU time used by the process) and a collector. After a
 * collection the clock is read again, so the collection's own CPU is not counted as work.
 */
export const makeIdleCollection = (
  policy: IdleCollectionPolicy,
  cpuMillis: () => number,
  collect: () => void
): (() => boolean) => {
  let last = cpuMillis()
  let work: Work = 0
  return () => {
    const now = cpuMillis()
    const decided = decideCollection(policy, work, now - last)
    work = decided.work
    last = now
    if (decided.collect) {
      collect()
      last = cpuMillis()
    }
    return decided.collect
  }
}

const processCpuMillis = (): number => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** The check every `checkMillis` for as long as the layer's scope is open. */
export const layer = (policy: IdleCollectionPolicy = DEFAULT_IDLE_COLLECTION) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const check = makeIdleCollection(policy, processCpuMillis, collectNow)
      yield* Effect.sync(check).pipe(
        Effect.repeat(Schedule.spaced(Duration.millis(policy.checkMillis))),
        Effect.delay(Duration.millis(policy.checkMillis)),
        Effect.forkScoped
      )
    })
  )
