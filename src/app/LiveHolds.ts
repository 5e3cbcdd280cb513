/**
 * The holds this instance's requests are using right now. A hold is live from the moment it is placed until its
 * settlement or release has committed (a settlement being retried through a database outage stays live). The ledger
 * renews a lease in the database for every live hold older than one renewal interval, with what its request has
 * delivered so far, so the sweep can tell a hold whose request is gone (no lease, or a lapsed one) from one that is
 * still in use, on this instance or any other. Calls shorter than the interval never write a lease.
 */
import { Latch } from "effect"
import type { Micros } from "../domain/Money.ts"

/** What a request has delivered so far, priced: what its hold is settled at if the process dies now. */
export interface Progress {
  readonly cost: Micros
  readonly usage: unknown
}

interface Entry {
  readonly accountId: string
  readonly since: number
  progress: (() => Progress | undefined) | undefined
  /** A lease row exists (or was asked for) in the database. */
  leased: boolean
}

/** One lease to write: the hold, and its progress when its request reports one. */
export interface LeaseRenewal {
  readonly holdId: string
  readonly accountId: string
  readonly progress: Progress | undefined
}

export class LiveHolds {
  readonly #entries = new Map<string, Entry>()
  /** Holds that ended with a lease row, whose row is to be deleted. */
  #ended: Array<string> = []
  /**
   * Open while there is lease work (a live hold, or an ended hold's row to delete): the renewal loop waits on it
   * instead of waking every interval on an idle instance (or, under a test clock, hundreds of thousands of times
   * for a simulated week).
   */
  readonly busy: Latch.Latch = Latch.makeUnsafe(false)

  add(holdId: string, accountId: string, nowMs: number): void {
    if (!this.#entries.has(holdId)) {
      this.#entries.set(holdId, { accountId, since: nowMs, progress: undefined, leased: false })
      this.busy.openUnsafe()
    }
  }

  /** Closes `busy` when nothing is live and no ended lease waits for deletion; true when it did. */
  idleUnsafe(): boolean {
    if (this.#entries.size > 0 || this.#ended.length > 0) return false
    this.busy.closeUnsafe()
    return true
  }

  /** `progress` is read at each renewal; the latest registration wins. Ignored for a hold that is not live. */
  reportProgress(holdId: string, progress: () => Progress | undefined): void {
    const entry = this.#entries.get(holdId)
    if (entry !== undefined) entry.progress = progress
  }

  remove(holdId: string): void {
    const entry = this.#entries.get(holdId)
    if (entry === undefined) return
    this.#entries.delete(holdId)
    if (entry.leased) this.#ended.push(holdId)
  }

  has(holdId: string): boolean {
    return this.#entries.has(holdId)
  }

  get size(): number {
    return this.#entries.size
  }

  /**
   * The leases to write now: every live hold at least `minAgeMs` old, with its progress read now.
   */
  renewals(nowMs: number, minAgeMs: number): Array<LeaseRenewal> {
    const due: Array<LeaseRenewal> = []
    for (const [holdId, entry] of this.#entries) {
      if (nowMs - entry.since < minAgeMs) continue
      entry.leased = true
      due.push({ holdId, accountId: entry.accountId, progress: entry.progress?.() })
    }
    return due
  }

  /** The leases of holds that ended since the last call, to delete. */
  takeEnded(): Array<string> {
    const ended = this.#ended
    this.#ended = []
    return ended
  }
}

/**
 * When this instance last saw the database fail (its start counts: it cannot know what happened before). The
 * periodic sweep waits a whole lease after it, so every live request has had the time to renew its own.
 */
export interface StoreHealth {
  troubleAt: number
}
