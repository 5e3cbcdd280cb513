/**
 * Background responses as durable work, as a port: the stored response row is the task. A worker of any instance
 * claims one under a lease and renews it while the call runs; a cancel from any instance moves its status, which the
 * worker sees at its next renewal. The events it streams are appended for replay (`GET …?stream=true`).
 */
import { Context, type Effect } from "effect"
import type { RateLimits } from "../../domain/keys/RateLimits.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import type { JsonObject, StoredResponse } from "./ResponseStore.ts"

/** The key a background response was made with, as stored with it (never the secret). */
export interface StoredKey {
  readonly keyId: string
  readonly accountId: string
  readonly models: ReadonlyArray<string> | null
  /** Micro-dollars as a decimal integer string. */
  readonly spendLimit: string | null
  readonly rateLimits: RateLimits | null
}

/** What a worker needs to make the call. */
export interface BackgroundRun {
  /** The request as the model is to be given it: the history before the turn, the turn, the client's settings. */
  readonly body: JsonObject
  readonly key: StoredKey
  readonly requestId: string
  /** The conversation the turn extends, with the turn's input items. */
  readonly conversation: { readonly conversationId: string; readonly items: ReadonlyArray<JsonObject> } | null
}

export interface ClaimedResponse {
  readonly response: StoredResponse
  readonly run: BackgroundRun
  /** How many times a worker has started it, this claim included: more than one means an earlier run was lost. */
  readonly attempts: number
}

/** One streamed event of a background response, numbered from 0 as the client sees `sequence_number`. */
export interface StoredEvent {
  readonly seq: number
  readonly event: JsonObject
}

/** What a replay reads in one statement: the response's status, its object once finished, and the events after N. */
export interface EventsAfter {
  readonly status: string
  readonly response: JsonObject
  readonly background: boolean
  /** Still running, or finished but its worker still writing its last events: more may come. */
  readonly live: boolean
  readonly events: ReadonlyArray<StoredEvent>
}

export class BackgroundResponseStore extends Context.Service<
  BackgroundResponseStore,
  {
    /** Writes a queued background response with its run and its first event, in one transaction. */
    readonly enqueue: (
      response: StoredResponse,
      run: BackgroundRun,
      first: StoredEvent
    ) => Effect.Effect<void, StoreUnavailable>
    /** Takes up to `limit` responses that are queued, or running under a lease that ran out, for `owner`. */
    readonly claim: (
      owner: string,
      now: Date,
      leaseUntil: Date,
      limit: number
    ) => Effect.Effect<ReadonlyArray<ClaimedResponse>, StoreUnavailable>
    /** Extends `owner`'s leases of `ids`; returns those it still holds, not cancelled (the others are to stop). */
    readonly renew: (
      owner: string,
      ids: ReadonlyArray<string>,
      leaseUntil: Date
    ) => Effect.Effect<ReadonlySet<string>, StoreUnavailable>
    /** Gives a claimed response back unstarted (its key was at its concurrency limit): queued again. */
    readonly requeue: (owner: string, id: string) => Effect.Effect<void, StoreUnavailable>
    /** Ends `owner`'s run with `response` (failed, not billed); false when it no longer holds it. */
    readonly finish: (
      owner: string,
      id: string,
      response: JsonObject,
      last: StoredEvent | undefined
    ) => Effect.Effect<boolean, StoreUnavailable>
    /** `owner` is done with the response (its last events are written): its lease goes. */
    readonly release: (owner: string, id: string) => Effect.Effect<void, StoreUnavailable>
    /** Cancels the account's response if it is still queued or running; false when it was not. */
    readonly cancel: (accountId: string, id: string, response: JsonObject) => Effect.Effect<boolean, StoreUnavailable>
    readonly appendEvents: (id: string, events: ReadonlyArray<StoredEvent>) => Effect.Effect<void, StoreUnavailable>
    /** The account's response's status and its events after `after`; undefined when there is no such response. */
    readonly eventsAfter: (
      accountId: string,
      id: string,
      after: number,
      now: Date
    ) => Effect.Effect<EventsAfter | undefined, StoreUnavailable>
  }
>()("tollgate/app/ports/BackgroundResponseStore") {}
