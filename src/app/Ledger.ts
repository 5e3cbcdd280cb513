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
import { Clock, Context, Effect, Exit, Layer, Option } from "effect"
import { randomUUID } from "node:crypto"
import type { Micros } from "../domain/Money.ts"
import { decide } from "../domain/ledger/LedgerAccount.ts"
import { available, type Decision, type LedgerCommand } from "../domain/ledger/LedgerState.ts"
import type { RefundReason } from "../domain/ledger/LedgerEvent.ts"
import { usageMetrics } from "../domain/ledger/UsageMetrics.ts"
import { describeRejection, type LedgerRejected, toLedgerError } from "./LedgerErrors.ts"
import { StoreRefused, StoreUnavailable, StreamVersionConflict } from "./StoreErrors.ts"
import { type HoldSweepOptions, makeHoldSweep } from "./HoldSweep.ts"
import { LiveHolds, type Progress } from "./LiveHolds.ts"
import { type BatchOutcome, type Companion, LedgerWriter, type WriterStatsSnapshot } from "./ports/LedgerWriter.ts"
import { makeResolutionRetries, UNSTORABLE_USAGE } from "./ResolutionRetries.ts"
import { noteBalance, noteCharge } from "./RequestTelemetry.ts"
import { inMemoryJournal, SettlementJournal } from "./SettlementJournal.ts"
import { traced } from "./Traced.ts"

export interface PlaceHoldInput {
  readonly accountId: string
  readonly holdId?: string
  readonly amount: Micros
  readonly keyId: string | null
  readonly keySpendLimit: Micros | null
  readonly model: string | null
  readonly plugin: string | null
  readonly requestId: string | null
  /** Overrides the default hold TTL; `null` = no expiry (a video task's deadline governs it). */
  readonly ttlSeconds?: number | null
}

export interface LedgerOptions extends HoldSweepOptions {
  readonly shards: number
  readonly maxBatch: number
}

export const defaultLedgerOptions: LedgerOptions = {
  holdTtlSeconds: 900,
  shards: 2,
  maxBatch: 256,
  sweepIntervalMillis: 15_000
}

export type { Companion, WriterStatsSnapshot }

/** The hold id of `likelyAccepted`'s probe (all zeros: `randomUUID` never makes it). */
const PROBE_HOLD_ID = "00000000-0000-0000-0000-000000000000"

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

        const holdCommand = (input: PlaceHoldInput, nowMs: number) => {
          const ttl = input.ttlSeconds === undefined ? options.holdTtlSeconds : input.ttlSeconds
          const expiresAt = ttl === null ? null : new Date(nowMs + ttl * 1000).toISOString()
          const command: LedgerCommand = {
            type: "PlaceHold",
            accountId: input.accountId,
            holdId: input.holdId ?? randomUUID(),
            amount: input.amount,
            keyId: input.keyId,
            keySpendLimit: input.keySpendLimit,
            model: input.model,
            plugin: input.plugin,
            requestId: input.requestId,
            expiresAt,
            at: new Date(nowMs).toISOString()
          }
          return {
            command,
            metadata: { requestId: input.requestId, keyId: input.keyId },
            holdId: command.holdId,
            expiresAt
          }
        }

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
            const metrics = usageMetrics(usage)
            yield* noteCharge(metrics.inputTokens, metrics.outputTokens, cost)
            const outcome = yield* Effect.exit(settleCommand(accountId, holdId, cost, usage))
            if (Exit.isSuccess(outcome)) {
              if (outcome.value._tag === "Rejected") {
                yield* Effect.logError("a delivered response could not be billed: its hold was already resolved").pipe(
                  Effect.annotateLogs({ holdId, reason: describeRejection(outcome.value.rejection) })
                )
              } else {
                const state = writer.knownState(accountId)
                if (state !== undefined) yield* noteBalance(available(state), state.deposited)
              }
              return yield* ended(holdId)
            }
            const error = Exit.findErrorOption(outcome)
            const refused = error._tag === "Some" && error.value instanceof StoreRefused
            yield* defer({
              holdId,
              accountId,
              resolution: { kind: "settle", cost, usage: refused ? UNSTORABLE_USAGE : usage },
              decidedAt
            })
            // Once the response is delivered the bill must go through even if the client or the server goes away now.
          },
          Effect.uninterruptible,
          traced("Ledger.settleDelivered")
        )

        const releaseWith = Effect.fnUntraced(function* (
          accountId: string,
          holdId: string,
          reason: RefundReason,
          companion: Companion
        ) {
          const at = yield* nowIso
          yield* acceptedWith(yield* enqueue({ type: "ReleaseHold", accountId, holdId, reason, at }, {}, companion))
        }, traced("Ledger.releaseWith"))

        const likelyAccepted = (input: PlaceHoldInput, nowMs: number): boolean => {
          const state = writer.knownState(input.accountId)
          if (state === undefined) return false
          if (input.keyId !== null && !state.keys.has(input.keyId)) return false
          // A fixed id that no real hold has: the probe is decided, never written, and needs no fresh uuid.
          const probe = holdCommand({ ...input, amount: input.amount * 2n, holdId: PROBE_HOLD_ID }, nowMs).command
          return decide(state, probe)._tag === "Accepted"
        }

        // Leases renewed for live holds, and the sweep of holds whose request is gone.
        const { sweepExpiredHolds } = yield* makeHoldSweep({ leases: writer.leases, live, submit, health, options })

        return Ledger.of({
          openAccount,
          deposit,
          placeHold,
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
