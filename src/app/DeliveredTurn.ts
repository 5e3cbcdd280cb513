/**
 * The chat pipeline's storage step, for the Responses API: a stored reply is committed with its bill before its final
 * event leaves, or not delivered as stored. The caller (the Responses gateway) says what to store as plain data
 * (`TurnToStore`); the pipeline, once it has the finished Response object and its price, commits the response, its
 * settlement outbox and its conversation's new items in one transaction (`ResponseStore.commit`), then settles. When
 * the commit fails, the client is told in the reply (`response_not_stored`) and the whole hold is released: output
 * the client cannot retrieve is never billed.
 */
import { Clock, Effect, Schema } from "effect"
import type { Micros } from "../domain/Money.ts"
import { hasDelivered } from "./ChatStreamAccounting.ts"
import type { StreamTransducer } from "../plugins/text/convert/StreamTransducer.ts"
import { withFailedTerminal } from "../plugins/text/convert/responsesTerminal.ts"
import type { ConversationAppend, JsonObject, ResponseStore, StoredResponse } from "./ports/ResponseStore.ts"

/** What the Responses API stores of a turn, less what only the reply tells (its Response object and status). */
export interface TurnToStore {
  /** The response row to write; undefined with `store: false` (a conversation may still be extended). */
  readonly response: Omit<StoredResponse, "response" | "status"> | undefined
  /** The conversation the turn extends: its input items now, its output items appended from the reply. */
  readonly conversation: Omit<ConversationAppend, "at"> | undefined
  /** A background run's worker: the write holds only while it still holds the response's lease. */
  readonly owner?: string | undefined
}

/** The stored turn could not be committed; the reply is not delivered as stored and nothing is billed. */
export class ResponseNotStored extends Schema.TaggedError<ResponseNotStored>()("ResponseNotStored", {
  id: Schema.String,
  /** `store_unavailable`: the database did not take it; `lease_lost`: a background run was cancelled or taken over. */
  reason: Schema.Literals(["store_unavailable", "lease_lost"])
}) {}

/** The stable error code a client sees for a reply that could not be stored. */
export const NOT_STORED_CODE = "response_not_stored"

export const notStoredMessage = (reason: ResponseNotStored["reason"]): string =>
  reason === "lease_lost"
    ? "The response was cancelled or taken over before it could be stored; nothing was charged."
    : "The response could not be stored (the gateway's database is unavailable); nothing was charged. Retry shortly."

/** How long a committed bill stands for its live request before the hold sweep may settle at it. */
const OUTBOX_LEASE_MS = 30_000

/**
 * Commits `final` as the turn's Response object with the hold's bill (`cost`, `usage`) as its outbox. The hold must
 * be committed. Fails with `ResponseNotStored` (nothing was written) when the store refuses or is unreachable.
 */
export const commitDelivered = (
  store: ResponseStore["Service"],
  turn: TurnToStore,
  final: JsonObject,
  bill: { readonly holdId: string; readonly accountId: string; readonly cost: Micros; readonly usage: unknown }
) =>
  Effect.gen(function* () {
    const nowMs = yield* Clock.currentTimeMillis
    const output = Array.isArray(final.output) ? (final.output as ReadonlyArray<JsonObject>) : []
    const id = typeof final.id === "string" ? final.id : (turn.response?.id ?? "")
    yield* store
      .commit({
        response:
          turn.response === undefined
            ? undefined
            : {
                ...turn.response,
                status: typeof final.status === "string" ? final.status : "completed",
                response: final
              },
        outbox: { ...bill, leaseUntil: new Date(nowMs + OUTBOX_LEASE_MS) },
        conversation:
          turn.conversation === undefined
            ? undefined
            : { ...turn.conversation, items: [...turn.conversation.items, ...output], at: new Date(nowMs) },
        owner: turn.owner
      })
      .pipe(
        Effect.catchTags({
          ResponseLeaseLost: () => Effect.fail(new ResponseNotStored({ id, reason: "lease_lost" })),
          StoreUnavailable: (error) =>
            Effect.andThen(
              Effect.logError("a response could not be stored; it is not delivered as stored", error),
              Effect.fail(new ResponseNotStored({ id, reason: "store_unavailable" }))
            )
        })
      )
  })

/**
 * The storage step of a stored stream. `storeFinal` lets the chunk carrying the final event go out only once its
 * response is committed with its bill, or rewrites it to say it was not stored (`response.failed`,
 * `response_not_stored`); `storeLeft`, when the client left early, stores what it was given (as failed) with its
 * bill; `refused` says the settlement must release the hold instead (nothing the client can retrieve is billed).
 */
export const makeStreamStorage = (
  store: ResponseStore["Service"],
  turn: TurnToStore,
  transducer: StreamTransducer,
  reply: {
    readonly holdId: string
    readonly accountId: string
    /** The finished Response object, once the stream has one. */
    readonly final: () => JsonObject | undefined
    /** What the stream is billed if it ends now (undefined: nothing was delivered). */
    readonly bill: () => { readonly cost: Micros; readonly usage: unknown } | undefined
  }
) => {
  let state: "pending" | "stored" | "refused" = "pending"
  const commit = (final: JsonObject) =>
    commitDelivered(store, turn, final, {
      holdId: reply.holdId,
      accountId: reply.accountId,
      ...(reply.bill() ?? { cost: 0n, usage: undefined })
    }).pipe(
      Effect.tap(() => Effect.sync(() => (state = "stored"))),
      Effect.tapError(() => Effect.sync(() => (state = "refused")))
    )
  const storeFinal = (text: string): Effect.Effect<string> => {
    const final = state === "pending" ? reply.final() : undefined
    if (final === undefined) return Effect.succeed(text)
    return commit(final).pipe(
      Effect.as(text),
      Effect.catch((error) =>
        Effect.succeed(withFailedTerminal(text, { code: NOT_STORED_CODE, message: notStoredMessage(error.reason) }))
      )
    )
  }
  const storeLeft = Effect.suspend(() => {
    if (state !== "pending" || !hasDelivered(transducer)) return Effect.void
    transducer.fail("api_error", "the client closed the stream before the response finished")
    const final = transducer.snapshot().final
    return final === undefined ? Effect.void : Effect.ignore(commit(final))
  }).pipe(Effect.uninterruptible)
  return { storeFinal, storeLeft, refused: () => state === "refused" }
}
