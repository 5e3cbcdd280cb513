/** The deployment choice's numbered invariants (src/domain/routing/DeploymentChoice.ts). */
import { assert, describe, it } from "@effect/vitest"
import fc from "fast-check"
import {
  bestTier,
  type Candidate,
  choose,
  rendezvous,
  roundRobin
} from "../../../src/domain/routing/DeploymentChoice.ts"

const candidates = fc.uniqueArray(
  fc.record({
    id: fc.string({ minLength: 1, maxLength: 8 }),
    weight: fc.integer({ min: 1, max: 10 }),
    priority: fc.integer({ min: 0, max: 2 })
  }),
  { minLength: 1, maxLength: 6, selector: (candidate) => candidate.id }
)

describe("DeploymentChoice", () => {
  it("1. the choice is one of the candidates, from the best priority among them", () => {
    fc.assert(
      fc.property(candidates, fc.option(fc.string(), { nil: undefined }), (list, key) => {
        const chosen = choose(list, key, new Map())
        assert.include(list, chosen)
        assert.strictEqual(chosen.priority, Math.min(...list.map((candidate) => candidate.priority)))
      }),
      { numRuns: 500 }
    )
  })

  it("2. round robin: over W·k picks each deployment is picked exactly k·weight times", () => {
    fc.assert(
      fc.property(candidates, fc.integer({ min: 1, max: 5 }), (list, k) => {
        const tier = bestTier(list)
        const total = tier.reduce((sum, candidate) => sum + candidate.weight, 0)
        const counters = new Map<string, number>()
        const picks = new Map<string, number>()
        for (let index = 0; index < total * k; index++) {
          const chosen = roundRobin(tier, counters)
          picks.set(chosen.id, (picks.get(chosen.id) ?? 0) + 1)
        }
        for (const candidate of tier) assert.strictEqual(picks.get(candidate.id) ?? 0, candidate.weight * k)
      }),
      { numRuns: 300 }
    )
  })

  it("3. affinity: a key keeps its deployment, and removing another candidate never moves it", () => {
    fc.assert(
      fc.property(candidates, fc.string(), fc.nat(), (list, key, drop) => {
        const tier = bestTier(list)
        const chosen = rendezvous(tier, key)
        assert.strictEqual(rendezvous(tier, key), chosen)
        const others = tier.filter((candidate) => candidate !== chosen)
        if (others.length === 0) return
        const removed = others[drop % others.length] as Candidate
        assert.strictEqual(
          rendezvous(
            tier.filter((candidate) => candidate !== removed),
            key
          ).id,
          chosen.id
        )
      }),
      { numRuns: 500 }
    )
  })

  it("affinity spreads many keys by weight (3:1 within two points over 20,000 keys)", () => {
    const tier: ReadonlyArray<Candidate> = [
      { id: "a", weight: 3, priority: 0 },
      { id: "b", weight: 1, priority: 0 }
    ]
    let a = 0
    for (let index = 0; index < 20_000; index++) if (rendezvous(tier, `key-${index}`).id === "a") a++
    assert.approximately(a / 20_000, 0.75, 0.02)
  })
})
