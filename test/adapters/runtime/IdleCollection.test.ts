/**
 * The collection when the gateway goes quiet: decided from the CPU each interval used, once per stretch of work, never
 * on a trickle, never twice without work between.
 */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  DEFAULT_IDLE_COLLECTION as policy,
  decideCollection,
  makeIdleCollection
} from "../../../src/adapters/runtime/IdleCollection.ts"

const intervals = fc.array(fc.integer({ min: 0, max: 3 * policy.checkMillis }), { maxLength: 200 })

/** Runs the check over CPU readings that grow by `used` per interval; a collection costs `cost` of CPU. */
const run = (used: ReadonlyArray<number>, cost = 30) => {
  let cpu = 0
  const collected: Array<number> = []
  const check = makeIdleCollection(
    policy,
    () => cpu,
    () => {
      cpu += cost
    }
  )
  used.forEach((ms, i) => {
    cpu += ms
    if (check()) collected.push(i)
  })
  return collected
}

describe("IdleCollection", () => {
  it("collects in a quiet interval after enough work, and only then", () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.nat(200), (work, interval) => {
        const decided = decideCollection(policy, work, interval)
        const due = interval < policy.quietCpuMillis && work >= policy.workCpuMillis
        assert.strictEqual(decided.collect, due)
        assert.strictEqual(decided.work, due ? 0 : work + interval)
      })
    )
  })

  it("never collects twice without a stretch of work between, nor in an interval that was not quiet", () => {
    fc.assert(
      fc.property(intervals, (used) => {
        const collected = run(used)
        for (const i of collected) assert.isBelow(used[i], policy.quietCpuMillis)
        for (let k = 1; k < collected.length; k++) {
          const between = used.slice(collected[k - 1] + 1, collected[k] + 1).reduce((a, b) => a + b, 0)
          assert.isAtLeast(between, policy.workCpuMillis)
        }
      })
    )
  })

  it("a burst then quiet collects once; an idle process and a steady trickle never do", () => {
    const idle = Array.from({ length: 100 }, () => 4)
    assert.deepStrictEqual(run(idle), [])
    const trickle = Array.from({ length: 100 }, () => policy.quietCpuMillis + 5)
    assert.deepStrictEqual(run(trickle), [])
    // Three busy intervals, then quiet ones: one collection, in the first quiet interval; its own CPU is not work.
    const burst = [1_900, 1_900, 1_900, ...idle]
    assert.deepStrictEqual(run(burst, 200), [3])
  })
})
