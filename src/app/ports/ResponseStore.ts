/**
 * Where stored Responses API responses are kept, as a port: each response with its own turn and the one it continued,
 * owned by one account, until its expiry. `app/responses` decides what to keep; `adapters/store` keeps it.
 */
import { Context, type Effect, Schema } from "effect"
import type { Micros } from "../../domain/Money.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"

export type JsonObject = Readonly<Record<string, unknown>>

export interface StoredResponse {
  readonly id: string
  readonly accountId: string
  readonly keyId: string
  readonly model: string
  /** The Response object's `status`: queued and in_progress for a background response not finished yet. */
  readonly status: string
  readonly previousResponseId: string | undefined
  readonly createdAt: Date
  readonly expiresAt: Date
  /** The client's settings for the turn: its body without `input`. */
  readonly request: JsonObject
  /** The turn's own input items, with ids (the history is its predecessors'). */
  readonly turnItems: ReadonlyArray<JsonObject>
  /** The Response object, encrypted reasoning included. */
  readonly response: JsonObject
  readonly background: boolean
}

/**
 * A delivered response's bill, written in the same transaction as the response: the cost is recorded as its hold's
 * progress (the hold lease, migration 0008), so that if this instance dies before the settlement commits, the hold
 * sweep settles the hold at this cost — a stored response is never left unbilled, and nothing is billed unless stored.
 */
export interface SettlementOutbox {
  readonly holdId: string
  readonly accountId: string
  readonly cost: Micros
  readonly usage: unknown
  /** How long the outbox stands for the live request before the sweep may act on it. */
  readonly leaseUntil: Date
}

/** Items a delivered turn adds to a conversation (its input, then its output), in the same transaction. */
export interface ConversationAppend {
  readonly conversationId: string
  readonly accountId: string
  readonly items: ReadonlyArray<JsonObject>
  readonly at: Date
}

/** What one `commit` writes: the response (absent with `store: false`), its bill, its conversation's new items. */
export interface DeliveredTurn {
  readonly response: StoredResponse | undefined
  readonly outbox: SettlementOutbox | undefined
  readonly conversation: ConversationAppend | undefined
  /** A background response: written only while `owner` still holds its lease and it is still running. */
  readonly owner?: string | undefined
}

/** The response's background run was taken over or cancelled: this instance may no longer write it. */
export class ResponseLeaseLost extends Schema.TaggedError<ResponseLeaseLost>()("ResponseLeaseLost", {
  id: Schema.String
}) {}

/** A stored response with everything before it: the conversation a next turn continues. */
export interface ResponseChain {
  readonly response: StoredResponse
  /** Every item the chain's models were given and answered, oldest first, up to and including this response's. */
  readonly history: ReadonlyArray<JsonObject>
}

export class ResponseStore extends Context.Service<
  ResponseStore,
  {
    /** Writes a delivered turn in one transaction (see DeliveredTurn). */
    readonly commit: (turn: DeliveredTurn) => Effect.Effect<void, StoreUnavailable | ResponseLeaseLost>
    /** The account's response, unless it expired or is not the account's. */
    readonly find: (
      accountId: string,
      id: string,
      now: Date
    ) => Effect.Effect<StoredResponse | undefined, StoreUnavailable>
    /** The response and its predecessors' items, in one query (O(chain length) rows). */
    readonly chain: (
      accountId: string,
      id: string,
      now: Date
    ) => Effect.Effect<ResponseChain | undefined, StoreUnavailable>
    /** The account's items among `ids` (of responses not expired), by id. */
    readonly findItems: (
      accountId: string,
      ids: ReadonlyArray<string>,
      now: Date
    ) => Effect.Effect<ReadonlyMap<string, JsonObject>, StoreUnavailable>
    /** Deletes the account's response; false when there was none. */
    readonly remove: (accountId: string, id: string) => Effect.Effect<boolean, StoreUnavailable>
    /** Deletes what expired before `now`; how many responses went. */
    readonly sweep: (now: Date) => Effect.Effect<number, StoreUnavailable>
  }
>()("tollgate/app/ports/ResponseStore") {}
