/** The deployment-health decider's numbered invariants (src/domain/routing/DeploymentHealth.ts), for random histories. */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  availability,
  type Health,
  type HealthPolicy,
  healthy,
  observe,
  type Outcome,
  startTrial
} from "../../../src/domain/routing/DeploymentHealth.ts"

const policy: HealthPolicy = { failureThreshold: 3, openMs: 30_000, cooldownMs: 1_000, maxCooldownMs: 60_000 }

const outcome: fc.Arbitrary<Outcome> = fc.oneof(
  fc.constant({ _tag: "Succeeded" } as const),
  fc.constant({ _tag: "Failed" } as const),
  fc.record({
    _tag: fc.constant("RateLimited" as const),
    retryAfterMs: fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined })
  })
)

/** A history: outcomes at increasing times, trials started where one was due. */
const history = fc.array(fc.tuple(outcome, fc.integer({ min: 0, max: 40_000 })), { maxLength: 40 })

const replay = (steps: ReadonlyArray<readonly [Outcome, number]>): { health: Health; now: number } => {
  let health = healthy
  let now = 1_000_000
  for (const [next, gap] of steps) {
    now += gap
    if (availability(health, now, policy)._tag === "TrialDue") health = startTrial(now)
    health = observe(health, next, now, policy)
  }
  return { health, now }
}

const isAvailable = (health: Health, now: number) => availability(health, now, policy)._tag !== "Blocked"

describe("DeploymentHealth", () => {
  it("1. a success leaves the deployment available, whatever came before", () => {
    fc.assert(
      fc.property(history, fc.integer({ min: 0, max: 10_000 }), (steps, gap) => {
        const { health, now } = replay(steps)
        assert.isTrue(isAvailable(observe(health, { _tag: "Succeeded" }, now + gap, policy), now + gap))
      }),
      { numRuns: 500 }
    )
  })

  it("2. a rate limit with retry-after R blocks for exactly R; without one, the cooldown backs off and is capped", () => {
    fc.assert(
      fc.property(history, fc.integer({ min: 1, max: 120_000 }), (steps, retryAfterMs) => {
        const { health, now } = replay(steps)
        const cooled = observe(health, { _tag: "RateLimited", retryAfterMs }, now, policy)
        assert.isFalse(isAvailable(cooled, now + retryAfterMs - 1))
        assert.strictEqual(availability(cooled, now + retryAfterMs, policy)._tag, "Available")
      }),
      { numRuns: 500 }
    )
    let health = healthy
    const waits: Array<number> = []
    for (let index = 0; index < 10; index++) {
      health = observe(health, { _tag: "RateLimited", retryAfterMs: undefined }, 0, policy)
      waits.push(health._tag === "Cooling" ? health.until : -1)
    }
    assert.deepStrictEqual(waits, [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000, 60_000])
  })

  it("3. the circuit opens on the threshold-th failure in a row, never before, and stays open for openMs", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { maxLength: 30 }), (failures) => {
        let health = healthy
        let inARow = 0
        for (const failed of failures) {
          health = observe(health, failed ? { _tag: "Failed" } : { _tag: "Succeeded" }, 0, policy)
          inARow = failed ? inARow + 1 : 0
          if (inARow < policy.failureThreshold) {
            assert.strictEqual(health._tag, "Healthy")
          } else {
            assert.strictEqual(health._tag, "Open")
            assert.isFalse(isAvailable(health, policy.openMs - 1))
            assert.isTrue(isAvailable(health, policy.openMs))
            return
          }
        }
      }),
      { numRuns: 500 }
    )
  })

  it("4. a due circuit admits one trial; its answer closes or reopens it; a trial with no answer expires", () => {
    const open = observe(
      observe(observe(healthy, { _tag: "Failed" }, 0, policy), { _tag: "Failed" }, 0, policy),
      { _tag: "Failed" },
      0,
      policy
    )
    assert.strictEqual(open._tag, "Open")
    const due = policy.openMs
    assert.strictEqual(availability(open, due, policy)._tag, "TrialDue")
    const trial = startTrial(due)
    assert.strictEqual(availability(trial, due + 1, policy)._tag, "Blocked")
    assert.strictEqual(
      availability(observe(trial, { _tag: "Succeeded" }, due + 5, policy), due + 5, policy)._tag,
      "Available"
    )
    const reopened = observe(trial, { _tag: "Failed" }, due + 5, policy)
    assert.deepStrictEqual(reopened, { _tag: "Open", until: due + 5 + policy.openMs })
    assert.strictEqual(availability(trial, due + policy.openMs, policy)._tag, "TrialDue")
  })

  it("5. with no new outcome, availability only improves with time", () => {
    fc.assert(
      fc.property(
        history,
        fc.integer({ min: 0, max: 200_000 }),
        fc.integer({ min: 0, max: 200_000 }),
        (steps, a, b) => {
          const { health, now } = replay(steps)
          const [early, late] = a <= b ? [a, b] : [b, a]
          if (isAvailable(health, now + early)) assert.isTrue(isAvailable(health, now + late))
        }
      ),
      { numRuns: 500 }
    )
  })
})
