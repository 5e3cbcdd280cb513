/**
 * Which deployment takes the next attempt: the best priority tier (lowest number) that has an available deployment,
 * then, inside it, either the conversation's own deployment (affinity: a weighted rendezvous hash, so the same key
 * lands on the same deployment while it stays available, and different keys spread by weight) or a smooth weighted
 * round robin (nginx's), which spreads requests by weight exactly rather than on average: over any run of
 * requests, each deployment's share is within one request of its weight's.
 *
 * Pure but for the round robin's counters, which the caller owns and passes in.
 *
 * Invariants (property-tested in test/domain/routing/DeploymentChoice.test.ts):
 * 1. The choice is always one of the candidates, from the best priority among them.
 * 2. Round robin: over W·k picks from a fixed tier whose weights sum to W, each deployment is picked exactly
 *    k·weight times.
 * 3. Affinity: the same key always picks the same deployment from the same candidates, and removing another
 *    candidate never moves it.
 */

export interface Candidate {
  /** Unique among the candidates. */
  readonly id: string
  /** Positive. */
  readonly weight: number
  /** Lower is preferred; a tier is taken only while every better one has nothing available. */
  readonly priority: number
}

/** Keeps the smooth weighted round robin's running weights, per candidate id. */
export type RoundRobinCounters = Map<string, number>

/** The candidates of the best priority among `candidates`. */
export const bestTier = <C extends Candidate>(candidates: ReadonlyArray<C>): ReadonlyArray<C> => {
  let best = Number.POSITIVE_INFINITY
  for (const candidate of candidates) best = Math.min(best, candidate.priority)
  return candidates.filter((candidate) => candidate.priority === best)
}

/** Smooth weighted round robin over `tier` (non-empty): raise each by its weight, take the highest, lower it by the sum. */
export const roundRobin = <C extends Candidate>(tier: ReadonlyArray<C>, counters: RoundRobinCounters): C => {
  let total = 0
  let chosen = tier[0] as C
  let chosenCurrent = Number.NEGATIVE_INFINITY
  for (const candidate of tier) {
    const current = (counters.get(candidate.id) ?? 0) + candidate.weight
    counters.set(candidate.id, current)
    total += candidate.weight
    if (current > chosenCurrent) {
      chosen = candidate
      chosenCurrent = current
    }
  }
  counters.set(chosen.id, chosenCurrent - total)
  return chosen
}

/** 32-bit FNV-1a of a string's UTF-16 units: stable across processes, so every instance agrees on a key's place. */
export const fnv1a = (text: string): number => {
  let hash = 0x811c9dc5
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index)
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  // Avalanche (murmur3's finalizer): FNV's low bits alone spread short, similar keys poorly.
  hash ^= hash >>> 16
  hash = Math.imul(hash, 0x85ebca6b) >>> 0
  hash ^= hash >>> 13
  hash = Math.imul(hash, 0xc2b2ae35) >>> 0
  hash ^= hash >>> 16
  return hash >>> 0
}

/**
 * Weighted rendezvous (highest random weight): each candidate scores `weight / -ln(u)` with `u` the key's hash with
 * the candidate's id, in (0, 1); the highest wins. A key's winner depends only on its own pair scores, so taking
 * another candidate away never moves it, and over many keys each wins in proportion to its weight.
 */
export const rendezvous = <C extends Candidate>(tier: ReadonlyArray<C>, key: string): C => {
  let chosen = tier[0] as C
  let best = Number.NEGATIVE_INFINITY
  for (const candidate of tier) {
    const u = (fnv1a(`${key}\u0000${candidate.id}`) + 0.5) / 4_294_967_296
    const score = candidate.weight / -Math.log(u)
    if (score > best) {
      best = score
      chosen = candidate
    }
  }
  return chosen
}

/** The next attempt's deployment among `available` (non-empty): the best tier, then affinity or round robin. */
export const choose = <C extends Candidate>(
  available: ReadonlyArray<C>,
  affinityKey: string | undefined,
  counters: RoundRobinCounters
): C => {
  const tier = bestTier(available)
  return affinityKey === undefined ? roundRobin(tier, counters) : rendezvous(tier, affinityKey)
}
