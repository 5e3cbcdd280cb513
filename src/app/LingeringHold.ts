/**
 * A hold whose call has already started, written as late as is safe so that a short call's hold and settlement share
 * one transaction. Why: a request is two ledger commits (the hold, then the settlement), and when the upstream
 * answers before the hold's commit is even needed, the second commit is pure latency. Here the hold waits in its
 * writer shard (LingeringCommand) until the hold's settlement arrives (then both go in one batch, the hold decided
 * first), until another command of its account comes (which must be decided after it), until the reply needs it
 * committed (a stream's first byte), or until the linger time is up. A short call for a whole reply then costs one
 * commit instead of two, one request at a time and under load alike: its hold is written once, already resolved, and
 * its account's row, stream head and key once (bench/README.md, "Lingering until the settlement"). A stream's hold
 * also rides its shard's next batch (`"next-batch"`): it must commit before the first byte anyway.
 *
 * What does not change: nothing reaches the client before its hold is committed (`settleDelivered` and `committed`
 * fail, and the reply is not delivered, unless the hold was accepted), and a delivered reply's settlement commits or
 * is journaled and retried. A call that fails leaves the same hold and refund as before, in one commit instead of two.
 */
import { Effect, Exit } from "effect"
import type { Micros } from "../domain/Money.ts"
import type { PlaceHoldCommand } from "./HoldCommand.ts"
import { available } from "../domain/ledger/LedgerState.ts"
import type { RefundReason } from "../domain/ledger/LedgerEvent.ts"
import { usageMetrics } from "../domain/ledger/UsageMetrics.ts"
import { describeRejection, type LedgerRejected, toLedgerError } from "./LedgerErrors.ts"
import type { BatchOutcome, LedgerWriter, LingeringCommand } from "./ports/LedgerWriter.ts"
import { UNSTORABLE_USAGE, type ResolutionRetries } from "./ResolutionRetries.ts"
import { noteBalance, noteCharge } from "./RequestTelemetry.ts"
import { StoreRefused, type StoreUnavailable } from "./StoreErrors.ts"

/** A hold placed with `Ledger.placeHoldLingering`: what became of it, and how its call ends. */
export interface PendingHold {
  readonly holdId: string
  readonly expiresAt: string | null
  /** The hold's decision, sending it to be written now if it still waits; fails as `placeHold` fails. */
  readonly committed: Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused>
  /** The call ended without a reply: the whole hold goes back, in the hold's own batch when the hold still waits. */
  readonly abandon: (reason: RefundReason) => Effect.Effect<void>
  /**
   * The reply is ready: its settlement goes in the hold's own batch when the hold still waits, else after it. Fails
   * only when the hold was not committed: then the reply must not be delivered. Once this succeeds the reply is
   * billed: its settlement committed, or is journaled and retried (as `Ledger.settleDelivered`).
   */
  readonly settleDelivered: (
    cost: Micros,
    usage: unknown
  ) => Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused>
}

/** Without a companion an outcome is a decision: only a rejection fails. */
const acceptedOrFail = (outcome: BatchOutcome) =>
  outcome._tag === "Rejected" ? Effect.fail(toLedgerError(outcome.rejection)) : Effect.void

/**
 * What follows the settlement of a delivered reply, whichever way it was submitted: the charge and the balance noted
 * on the request, a settlement the database could not take journaled and retried, one that found its hold resolved
 * already logged.
 */
export const afterDeliveredSettlement = (
  deps: { readonly writer: LedgerWriter["Service"]; readonly retries: ResolutionRetries },
  settlement: { readonly accountId: string; readonly holdId: string; readonly cost: Micros; readonly usage: unknown },
  decidedAt: string,
  outcome: Exit.Exit<BatchOutcome, StoreUnavailable | StoreRefused>
) =>
  Effect.gen(function* () {
    const { accountId, holdId, cost, usage } = settlement
    const metrics = usageMetrics(usage)
    yield* noteCharge(metrics.inputTokens, metrics.outputTokens, cost)
    if (Exit.isSuccess(outcome)) {
      if (outcome.value._tag === "Rejected") {
        yield* Effect.logError("a delivered response could not be billed: its hold was already resolved").pipe(
          Effect.annotateLogs({ holdId, reason: describeRejection(outcome.value.rejection) })
        )
      } else if (outcome.value._tag === "Accepted") {
        const state = deps.writer.knownState(accountId)
        if (state !== undefined) yield* noteBalance(available(state), state.deposited)
      }
      return true
    }
    const error = Exit.findErrorOption(outcome)
    const refused = error._tag === "Some" && error.value instanceof StoreRefused
    // Once the response is delivered the bill must go through even if the client or the server goes away now.
    yield* deps.retries.defer({
      holdId,
      accountId,
      resolution: { kind: "settle", cost, usage: refused ? UNSTORABLE_USAGE : usage },
      decidedAt
    })
    return false
  })

/** The pending hold around `lingering`, the writer's handle on the hold command `hold`. */
export const makePendingHold = (
  deps: {
    readonly writer: LedgerWriter["Service"]
    readonly retries: ResolutionRetries
    /** The hold is resolved: it leaves the live set (unless its resolution waits for the database). */
    readonly ended: (holdId: string) => Effect.Effect<void>
    readonly release: (accountId: string, holdId: string, reason: RefundReason) => Effect.Effect<void, unknown>
    readonly settleDelivered: (accountId: string, holdId: string, cost: Micros, usage: unknown) => Effect.Effect<void>
    readonly nowIso: Effect.Effect<string>
  },
  hold: PlaceHoldCommand,
  lingering: LingeringCommand
): PendingHold => {
  const { accountId, holdId } = hold
  const decided = Effect.flatMap(lingering.outcome, acceptedOrFail)
  const committed = Effect.andThen(lingering.flush, decided)
  return {
    holdId,
    expiresAt: hold.expiresAt,
    committed,
    abandon: (reason) =>
      Effect.gen(function* () {
        const at = yield* deps.nowIso
        const follow = yield* lingering.followWith({ type: "ReleaseHold", accountId, holdId, reason, at }, {})
        if (follow === undefined) {
          // The hold went ahead alone: released once (and if) it committed.
          if (Exit.isSuccess(yield* Effect.exit(decided)))
            yield* deps.release(accountId, holdId, reason).pipe(Effect.ignore)
          return
        }
        const held = yield* Effect.exit(decided)
        const released = yield* Effect.exit(follow)
        if (Exit.isSuccess(held) && Exit.isFailure(released)) {
          // Committed without its release: the refund is retried like any other (the balance stays held meanwhile).
          yield* deps.retries.defer({ holdId, accountId, resolution: { kind: "release", reason }, decidedAt: at })
        } else {
          yield* deps.ended(holdId)
        }
      }).pipe(Effect.uninterruptible),
    settleDelivered: (cost, usage) =>
      Effect.gen(function* () {
        const at = yield* deps.nowIso
        const follow = yield* lingering.followWith({ type: "SettleHold", accountId, holdId, cost, usage, at }, {})
        if (follow === undefined) {
          // The hold went ahead alone: it must be committed before the settlement is sent.
          yield* committed
          return yield* deps.settleDelivered(accountId, holdId, cost, usage)
        }
        const held = yield* Effect.exit(decided)
        const settled = yield* Effect.exit(follow)
        // Accepted settlement means its hold committed, whatever the hold's own answer said (a lost reply).
        const billed = Exit.isSuccess(settled) && settled.value._tag === "Accepted"
        if (Exit.isFailure(held) && !billed) return yield* Effect.failCause(held.cause)
        if (yield* afterDeliveredSettlement(deps, { accountId, holdId, cost, usage }, at, settled)) {
          yield* deps.ended(holdId)
        }
      }).pipe(Effect.uninterruptible)
  }
}
