/**
 * The background-response worker, on every instance: it claims queued responses (and ones whose worker's lease ran
 * out) under a lease, runs each through the chat pipeline as a stream whose events it appends for replay, and renews
 * its leases while they run. A response cancelled or deleted from any instance is stopped at the next renewal (the
 * upstream call is aborted and its hold released). One whose earlier run was lost (its instance died, or could not
 * renew for a whole lease) is failed: its run never stored its output, so its hold is released by the hold sweep and
 * nothing is charged. While it runs, a response takes one of its key's concurrency slots; a key at its limit leaves
 * it queued until a slot frees.
 */
import { Cause, Clock, Context, Effect, Fiber, Layer, Queue, Result, Schedule, Stream } from "effect"
import { randomUUID } from "node:crypto"
import { effectiveRateLimits } from "../../domain/keys/RateLimits.ts"
import { ChatGateway } from "../ChatGateway.ts"
import type { AuthenticatedKey } from "../Keys.ts"
import { OperatorConfig } from "../OperatorConfig.ts"
import { RateLimiter } from "../RateLimiter.ts"
import { BackgroundResponseStore, type ClaimedResponse, type StoredEvent } from "../ports/BackgroundResponseStore.ts"
import { ChatDialects } from "../ports/ChatDialects.ts"
import type { JsonObject } from "../ports/ResponseStore.ts"
import { failedResponse, failureOf, sseEvents } from "./BackgroundEvents.ts"
import { idlePollMillis } from "../IdlePoll.ts"

export interface BackgroundOptions {
  /** How often each instance looks for queued work (a response made on this instance starts at once). */
  readonly pollMillis: number
  /** How long a claim lasts without renewal: the longest a dead instance's response stays `in_progress`. */
  readonly leaseMillis: number
  /** How often leases are renewed, and cancellations from other instances noticed. */
  readonly renewMillis: number
  /** Responses one instance runs at once. */
  readonly maxRunning: number
  /** How often a replay of a running response looks for new events. */
  readonly replayPollMillis: number
}

export const defaultBackgroundOptions: BackgroundOptions = {
  pollMillis: 500,
  leaseMillis: 30_000,
  renewMillis: 1_000,
  maxRunning: 32,
  replayPollMillis: 200
}

const LOST_MESSAGE =
  "The gateway instance running this background response stopped before it finished; nothing was charged."

export class BackgroundResponses extends Context.Service<
  BackgroundResponses,
  {
    /** Starts a claim round now (a response was just queued here). */
    readonly wake: Effect.Effect<void>
    readonly options: BackgroundOptions
  }
>()("tollgate/app/responses/BackgroundResponses") {
  static readonly layerWith = (options: BackgroundOptions) =>
    Layer.effect(
      BackgroundResponses,
      Effect.gen(function* () {
        const chat = yield* ChatGateway
        const store = yield* BackgroundResponseStore
        const limiter = yield* RateLimiter
        const dialects = yield* ChatDialects
        const config = yield* OperatorConfig
        const scope = yield* Effect.scope
        const owner = `responses-${randomUUID()}`
        const running = new Map<string, Fiber.Fiber<unknown, unknown>>()
        const wakeups = yield* Queue.sliding<void>(1)
        const leaseUntil = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms + options.leaseMillis))
        const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

        /** Ends a run that stored nothing: failed, with its terminal event, unless it was stored or cancelled. */
        const fail = (claimed: ClaimedResponse, error: { code: string; message: string }, lastSeq: number) => {
          const failed = failedResponse(claimed.response.response, error)
          const event = { type: "response.failed", response: failed, sequence_number: lastSeq + 1 }
          return store.finish(owner, claimed.response.id, failed, { seq: lastSeq + 1, event })
        }

        /** An earlier run of this response was lost: it ends failed after the events that run stored. */
        const failLost = (claimed: ClaimedResponse) =>
          Effect.gen(function* () {
            const read = yield* store.eventsAfter(claimed.response.accountId, claimed.response.id, -1, yield* now)
            yield* fail(claimed, { code: "server_error", message: LOST_MESSAGE }, read?.events.at(-1)?.seq ?? 0)
          })

        /** The run's SSE text as stored events, numbered after the queued event (0), appended in batches. */
        const record = (id: string, frames: Stream.Stream<Uint8Array>) =>
          Effect.gen(function* () {
            let last: StoredEvent | undefined
            yield* sseEvents(frames).pipe(
              Stream.map((event): StoredEvent => {
                const seq = (typeof event.sequence_number === "number" ? event.sequence_number : 0) + 1
                last = { seq, event: { ...event, sequence_number: seq } }
                return last
              }),
              Stream.groupedWithin(64, options.replayPollMillis),
              Stream.runForEach((batch) =>
                store
                  .appendEvents(id, batch)
                  .pipe(Effect.catch((error) => Effect.logWarning("background response events not recorded", error)))
              )
            )
            return last
          })

        const runClaimed = (claimed: ClaimedResponse) =>
          Effect.gen(function* () {
            const { response, run } = claimed
            const key: AuthenticatedKey = {
              keyId: run.key.keyId,
              accountId: run.key.accountId,
              models: run.key.models,
              spendLimit: run.key.spendLimit === null ? null : BigInt(run.key.spendLimit),
              rateLimits: run.key.rateLimits ?? undefined
            }
            const decoded = dialects.responses.decode(run.body, { model: response.model, stream: true })
            if (Result.isFailure(decoded)) {
              return yield* fail(claimed, { code: "invalid_request", message: decoded.failure.message }, 0)
            }
            const { response: _object, status: _status, ...row } = response
            const result = yield* chat
              .chat({
                dialect: "responses",
                body: { ...run.body, stream: true },
                key,
                requestId: run.requestId,
                responseId: response.id,
                request: decoded.success,
                stored: {
                  response: row,
                  conversation:
                    run.conversation === null ? undefined : { ...run.conversation, accountId: key.accountId },
                  owner
                }
              })
              .pipe(Effect.result)
            if (Result.isFailure(result)) return yield* fail(claimed, failureOf(result.failure), 0)
            if (result.success._tag !== "Stream") return
            const last = yield* record(response.id, result.success.frames)
            // Stored with its bill already, unless the store refused it: then it ends as its stream ended.
            const terminal = last?.event.response as JsonObject | undefined
            if (terminal !== undefined && last?.event.type === "response.failed") {
              yield* store.finish(owner, response.id, terminal, undefined)
            } else if (last === undefined) {
              yield* fail(claimed, { code: "server_error", message: "the response ended without output" }, 0)
            }
          })

        const start = (claimed: ClaimedResponse) =>
          Effect.gen(function* () {
            const id = claimed.response.id
            if (claimed.attempts > 1) return yield* failLost(claimed)
            const own = claimed.run.key.rateLimits ?? config.rateLimits
            const limits = effectiveRateLimits(own, config.rateLimits)
            const admitted = yield* Effect.result(
              limiter.admit(
                claimed.run.key.keyId,
                { rpm: null, tpm: null, concurrency: limits.concurrency },
                { defaults: false, countRequest: false }
              )
            )
            if (Result.isFailure(admitted)) return yield* store.requeue(owner, id)
            const fiber = yield* runClaimed(claimed).pipe(
              Effect.catchCause((cause) =>
                Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError("a background response failed", cause)
              ),
              // Its events are all written: the lease goes (a replay then ends), and so does its concurrency slot.
              Effect.ensuring(
                store
                  .release(owner, id)
                  .pipe(
                    Effect.ignore,
                    Effect.andThen(admitted.success.release),
                    Effect.andThen(Effect.sync(() => running.delete(id)))
                  )
              ),
              Effect.forkIn(scope)
            )
            running.set(id, fiber)
          })

        /** How many responses the round claimed (0 when it could not ask). */
        const claimRound = Effect.gen(function* () {
          const room = options.maxRunning - running.size
          if (room <= 0) return 0
          const claimed = yield* store.claim(owner, yield* now, yield* leaseUntil, room)
          yield* Effect.forEach(claimed, (c) => start(c).pipe(Effect.catch((e) => Effect.logWarning("claim", e))), {
            discard: true
          })
          return claimed.length
        }).pipe(
          Effect.catch((error) => Effect.as(Effect.logWarning("background responses could not be claimed", error), 0))
        )

        // A response created here wakes the loop at once; an idle one asks less often (IdlePoll.ts).
        const idle = idlePollMillis(options)
        yield* claimRound.pipe(
          Effect.flatMap((claimed) =>
            Effect.raceFirst(
              Effect.sleep(claimed === 0 && running.size === 0 ? idle : options.pollMillis),
              Queue.take(wakeups)
            )
          ),
          Effect.forever,
          Effect.forkIn(scope)
        )

        // Renewal: a response this instance no longer holds (cancelled, deleted, taken over) is stopped.
        yield* Effect.gen(function* () {
          if (running.size === 0) return
          const ids = [...running.keys()]
          const held = yield* store.renew(owner, ids, yield* leaseUntil)
          for (const id of ids) {
            const fiber = running.get(id)
            if (!held.has(id) && fiber !== undefined) yield* Effect.forkIn(Fiber.interrupt(fiber), scope)
          }
        }).pipe(
          Effect.catch((error) => Effect.logWarning("background response leases not renewed", error)),
          Effect.repeat(Schedule.spaced(options.renewMillis)),
          Effect.forkIn(scope)
        )

        return BackgroundResponses.of({ wake: Effect.asVoid(Queue.offer(wakeups, undefined)), options })
      })
    )
}
