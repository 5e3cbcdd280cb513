/**
 * The ledger service: calls become commands, commands go to the writer behind `app/ports/LedgerWriter.ts`, decisions
 * come back as answers. The writer the gateway runs (adapters/store/PgLedgerWriter.ts) is a group-commit writer:
 * commands queue per shard (accounts hash to shards), and each shard commits whatever has queued — up to `maxBatch` —
 * in one transaction. Under load many requests' holds and settlements share a transaction; idle, a command commits
 * alone with no added wait. The rules are checked per command by the pure decider, in queue order, so batching
 * weakens none of them, and a command the database refuses fails alone (LedgerStore.commitIsolated).
 *
 * Around the writer: holds in use are live (LiveHolds) and leased with their progress, so the sweep resolves only
 * holds whose request is gone (HoldSweep); a delivered response's settlement commits or is journaled and retried.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { randomUUID } from "node:crypto"
import type { Micros } from "../domain/Money.ts"
import type { Decision, LedgerCommand } from "../domain/ledger/LedgerState.ts"
import type { RefundReason } from "../domain/ledger/LedgerEvent.ts"
import { describeRejection, type LedgerRejected, toLedgerError } from "./LedgerErrors.ts"
import { type StoreRefused, StoreUnavailable, StreamVersionConflict } from "./StoreErrors.ts"
import { type HoldSweepOptions, makeHoldSweep } from "./HoldSweep.ts"
import { LiveHolds, type Progress } from "./LiveHolds.ts"
import {
  type BatchOutcome,
  type Companion,
  LedgerWriter,
  type LingerUntil,
  type WriterStatsSnapshot
} from "./ports/LedgerWriter.ts"
import { makeResolutionRetries } from "./ResolutionRetries.ts"
import {
  holdCommand as holdCommandFor,
  likelyAccepted as likelyAcceptedBy,
  type PlaceHoldInput
} from "./HoldCommand.ts"
import { afterDeliveredSettlement, makePendingHold, type PendingHold } from "./LingeringHold.ts"
import { inMemoryJournal, SettlementJournal } from "./SettlementJournal.ts"
import { traced } from "./Traced.ts"

export interface LedgerOptions extends HoldSweepOptions {
  readonly shards: number
  readonly maxBatch: number
  /** How long a hold placed with `placeHoldLingering` may wait for its settlement before it is written alone. */
  readonly holdLingerMillis: number
}

export const defaultLedgerOptions: LedgerOptions = {
  holdTtlSeconds: 900,
  shards: 2,
  maxBatch: 256,
  holdLingerMillis: 25,
  sweepIntervalMillis: 15_000
}

export type { Companion, PendingHold, PlaceHoldInput, WriterStatsSnapshot }

export class Ledger extends Context.Service<
  Ledger,
  {
    readonly openAccount: (
      name: string
    ) => Effect.Effect<
      { readonly id: string; readonly name: string; readonly createdAt: string },
      StoreUnavailable | StoreRefused
    >
    /** `duplicate` is true when the reference was already deposited (nothing new was written). */
    readonly deposit: (
      accountId: string,
      amount: Micros,
      reference: string,
      metadata?: Record<string, unknown>
    ) => Effect.Effect<{ readonly duplicate: boolean }, LedgerRejected | StoreUnavailable | StoreRefused>
    readonly placeHold: (
      input: PlaceHoldInput
    ) => Effect.Effect<
      { readonly holdId: string; readonly expiresAt: string | null },
      LedgerRejected | StoreUnavailable | StoreRefused
    >
    /**
     * A hold for a call that starts at once (see `likelyAccepted`), written as late as is safe: with its own
     * settlement, before its account's next command, when committed is asked for, after `holdLingerMillis`, and with
     * `until: "next-batch"` (a stream's) also with its shard's next batch (see LingeringHold.ts). Only queued here:
     * never waits and never fails; `onRefused` is called the moment the hold is refused, so that the call it was to
     * pay for can stop.
     */
    readonly placeHoldLingering: (
      input: PlaceHoldInput,
      onRefused?: () => void,
      until?: LingerUntil
    ) => Effect.Effect<PendingHold>
    readonly settle: (
      accountId: string,
      holdId: string,
      cost: Micros,
      usage: unknown
    ) => Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused>
    readonly release: (
      accountId: string,
      holdId: string,
      reason: RefundReason
    ) => Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused>
    /**
     * The three hold commands with a companion: events of another stream (a video task) committed in the same
     * transaction, only if the ledger accepts the command. Fails with StreamVersionConflict when the companion's
     * stream moved past `expected` (nothing was written).
     */
    readonly placeHoldWith: (
      input: PlaceHoldInput,
      companion: Companion
    ) => Effect.Effect<
      { readonly holdId: string; readonly expiresAt: string | null },
      LedgerRejected | StoreUnavailable | StoreRefused | StreamVersionConflict
    >
    readonly settleWith: (
      accountId: string,
      holdId: string,
      cost: Micros,
      usage: unknown,
      companion: Companion
    ) => Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused | StreamVersionConflict>
    readonly releaseWith: (
      accountId: string,
      holdId: string,
      reason: RefundReason,
      companion: Companion
    ) => Effect.Effect<void, LedgerRejected | StoreUnavailable | StoreRefused | StreamVersionConflict>
    /**
     * Settles a hold whose response was delivered, and never fails: the settlement commits now, or — when the
     * database cannot take it — is kept in the settlement journal and retried (with back-off, through outages and
     * restarts) until it commits, the hold staying held meanwhile. A hold found already resolved is logged.
     */
    readonly settleDelivered: (accountId: string, holdId: string, cost: Micros, usage: unknown) => Effect.Effect<void>
    /**
     * What the request using `holdId` has delivered so far, read at each lease renewal: after a crash the hold is
     * settled at the last progress recorded instead of released. For streams; ignored once the hold is resolved.
     */
    readonly reportProgress: (holdId: string, progress: () => Progress | undefined) => void
    /**
     * Resolves the holds whose request is gone: never leased and past their expiry, or with a lease nobody renewed;
     * one with recorded progress is settled at it, the others released as expired. Holds in use by this instance's
     * requests are never touched. Returns how many this call resolved.
     */
    readonly sweepExpiredHolds: Effect.Effect<number, StoreUnavailable | StoreRefused>
    /**
     * A hint, not a decision: true when this instance's own last commit of the account shows room for twice the hold
     * (balance and the key's spend limit). False when the account is not remembered (never written here, or evicted)
     * or looks short. Callers may start work that the hold will pay for before the hold is committed only when this
     * is true, so an account without funds never costs an upstream call; the committed decision still rules. `nowMs`
     * is the caller's `Clock` time, the time the hold would be placed at.
     */
    readonly likelyAccepted: (input: PlaceHoldInput, nowMs: number) => boolean
    /** This instance's writers so far: batches and commands committed, and batches decided again. */
    readonly writerStats: () => WriterStatsSnapshot
    /** Holds this instance's requests are using, and resolutions waiting for the database. */
    readonly liveStats: () => { readonly liveHolds: number; readonly pendingResolutions: number }
  }
>()("tollgate/app/Ledger") {
  /** The ledger on a writer (see `adapters/store/PgLedgerWriter.ts` for the one the gateway runs). */
  static readonly layerWith = (options: LedgerOptions) =>
    Layer.effect(
      Ledger,
      Effect.gen(function* () {
        const writer = yield* LedgerWriter
        const journal = Option.getOrElse(yield* Effect.serviceOption(SettlementJournal), inMemoryJournal)
        const live = new LiveHolds()
        const health = writer.health
        const enqueue = writer.submit

        /** Without a companion an outcome is always a ledger decision. */
        const submit = (command: LedgerCommand, metadata: Record<string, unknown> = {}) =>
          Effect.flatMap(enqueue(command, metadata, undefined), (outcome) =>
            outcome._tag === "CompanionConflict"
              ? Effect.die("a companion conflict on a command without a companion")
              : Effect.succeed(outcome)
          )

        const accepted = (decision: Decision) =>
          decision._tag === "Rejected" ? Effect.fail(toLedgerError(decision.rejection)) : Effect.succeed(decision)

        const acceptedWith = (outcome: BatchOutcome) =>
          outcome._tag === "CompanionConflict"
            ? Effect.fail(new StreamVersionConflict({ stream: outcome.stream, expected: "the version read" }))
            : accepted(outcome)

        const nowIso = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

        const openAccount = Effect.fnUntraced(function* (name: string) {
          const accountId = randomUUID()
          const at = yield* nowIso
          const decision = yield* submit({ type: "OpenAccount", accountId, name, at })
          if (decision._tag === "Rejected") return yield* Effect.die(describeRejection(decision.rejection)) // fresh uuid: a bug
          return { id: accountId, name, createdAt: at }
        }, traced("Ledger.openAccount"))

        const deposit = Effect.fnUntraced(function* (
          accountId: string,
          amount: Micros,
          reference: string,
          metadata: Record<string, unknown> = {}
        ) {
          const at = yield* nowIso
          const decision = yield* accepted(
            yield* submit({ type: "Deposit", accountId, amount, reference, at }, { ...metadata, actor: "admin" })
          )
          return { duplicate: decision.duplicate }
        }, traced("Ledger.deposit"))

        const holdCommand = (input: PlaceHoldInput, nowMs: number) =>
          holdCommandFor(input, nowMs, options.holdTtlSeconds)

        const placeHold = Effect.fnUntraced(function* (input: PlaceHoldInput) {
          const nowMs = yield* Clock.currentTimeMillis
          const hold = holdCommand(input, nowMs)
          yield* accepted(yield* submit(hold.command, hold.metadata))
          // A hold with an expiry is in use by this request until it resolves (a video task's has none: its worker
          // and deadline govern it).
          if (hold.expiresAt !== null) live.add(hold.holdId, input.accountId, nowMs)
          return { holdId: hold.holdId, expiresAt: hold.expiresAt }
        }, traced("Ledger.placeHold"))

        const placeHoldWith = Effect.fnUntraced(function* (input: PlaceHoldInput, companion: Companion) {
          const hold = holdCommand(input, yield* Clock.currentTimeMillis)
          yield* acceptedWith(yield* enqueue(hold.command, hold.metadata, companion))
          return { holdId: hold.holdId, expiresAt: hold.expiresAt }
        }, traced("Ledger.placeHoldWith"))

        // Resolutions that must commit: retried until the database takes them, journaled against a restart.
        const retries = yield* makeResolutionRetries({ submit, journal, live, health, describe: describeRejection })
        /** A hold leaves the live set once resolved, unless its resolution still waits for the database. */
        const ended = (holdId: string) =>
          Effect.sync(() => {
            if (!retries.has(holdId)) live.remove(holdId)
          })
        const defer = retries.defer

        const settleCommand = (accountId: string, holdId: string, cost: Micros, usage: unknown) =>
          Effect.flatMap(nowIso, (at) => submit({ type: "SettleHold", accountId, holdId, cost, usage, at }))

        const settle = Effect.fnUntraced(function* (accountId: string, holdId: string, cost: Micros, usage: unknown) {
          yield* accepted(yield* settleCommand(accountId, holdId, cost, usage).pipe(Effect.ensuring(ended(holdId))))
        }, traced("Ledger.settle"))

        const settleWith = Effect.fnUntraced(function* (
          accountId: string,
          holdId: string,
          cost: Micros,
          usage: unknown,
          companion: Companion
        ) {
          const at = yield* nowIso
          yield* acceptedWith(yield* enqueue({ type: "SettleHold", accountId, holdId, cost, usage, at }, {}, companion))
        }, traced("Ledger.settleWith"))

        const release = Effect.fnUntraced(function* (accountId: string, holdId: string, reason: RefundReason) {
          const at = yield* nowIso
          const decision = yield* submit({ type: "ReleaseHold", accountId, holdId, reason, at }).pipe(
            Effect.tapError((error) =>
              // The refund is retried like a settlement: until it commits, the hold keeps the balance held.
              error instanceof StoreUnavailable
                ? defer({ holdId, accountId, resolution: { kind: "release", reason }, decidedAt: at })
                : Effect.void
            ),
            Effect.ensuring(ended(holdId))
          )
          yield* accepted(decision)
        }, traced("Ledger.release"))

        const settleDelivered = Effect.fnUntraced(
          function* (accountId: string, holdId: string, cost: Micros, usage: unknown) {
            const decidedAt = yield* nowIso
            const outcome = yield* Effect.exit(settleCommand(accountId, holdId, cost, usage))
            const settlement = { accountId, holdId, cost, usage }
            if (yield* afterDeliveredSettlement({ writer, retries }, settlement, decidedAt, outcome)) {
              yield* ended(holdId)
            }
          },
          Effect.uninterruptible,
          traced("Ledger.settleDelivered")
        )

        const placeHoldLingering = Effect.fnUntraced(function* (
          input: PlaceHoldInput,
          onRefused?: () => void,
          until?: LingerUntil
        ) {
          const nowMs = yield* Clock.currentTimeMillis
          const hold = holdCommand(input, nowMs)
          const onDecided = (outcome: BatchOutcome | StoreUnavailable | StoreRefused) => {
            if (outcome._tag === "Rejected") onRefused?.()
            // In use by its request from the moment it commits, whenever that is (renewed, never swept, until
            // resolved), as a hold placed with `placeHold`.
            if (outcome._tag === "Accepted" && hold.expiresAt !== null) live.add(hold.holdId, input.accountId, nowMs)
          }
          const lingering = yield* writer.submitLingering(hold.command, hold.metadata, onDecided, until)
          return makePendingHold({ writer, retries, ended, release, settleDelivered, nowIso }, hold.command, lingering)
        })

        const releaseWith = Effect.fnUntraced(function* (
          accountId: string,
          holdId: string,
          reason: RefundReason,
          companion: Companion
        ) {
          const at = yield* nowIso
          yield* acceptedWith(yield* enqueue({ type: "ReleaseHold", accountId, holdId, reason, at }, {}, companion))
        }, traced("Ledger.releaseWith"))

        const likelyAccepted = (input: PlaceHoldInput, nowMs: number) =>
          likelyAcceptedBy(writer.knownState(input.accountId), input, nowMs, options.holdTtlSeconds)

        // Leases renewed for live holds, and the sweep of holds whose request is gone.
        const { sweepExpiredHolds } = yield* makeHoldSweep({ leases: writer.leases, live, submit, health, options })

        return Ledger.of({
          openAccount,
          deposit,
          placeHold,
          placeHoldLingering,
          settle,
          release,
          placeHoldWith,
          settleWith,
          releaseWith,
          settleDelivered,
          reportProgress: (holdId, progress) => live.reportProgress(holdId, progress),
          sweepExpiredHolds,
          likelyAccepted,
          liveStats: () => ({ liveHolds: live.size, pendingResolutions: retries.size() }),
          writerStats: writer.stats
        })
      })
    )
}
