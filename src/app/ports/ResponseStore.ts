/**
 * Where stored Responses API responses are kept, as a port: each with the conversation it continued, owned by one
 * account, until its expiry. `app/ResponsesGateway.ts` decides what to keep; `adapters/store` keeps it.
 */
import { Context, type Effect } from "effect"
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
  /** Everything the model was given, with ids: the history, then the turn's own input. */
  readonly inputItems: ReadonlyArray<JsonObject>
  /** The Response object, encrypted reasoning included. */
  readonly response: JsonObject
}

export class ResponseStore extends Context.Service<
  ResponseStore,
  {
    /** Saves a response (again, as a background one moves on), and indexes its turn's items and output by id. */
    readonly save: (
      response: StoredResponse,
      turnItems: ReadonlyArray<JsonObject>
    ) => Effect.Effect<void, StoreUnavailable>
    /** The account's response, unless it expired or is not the account's. */
    readonly find: (
      accountId: string,
      id: string,
      now: Date
    ) => Effect.Effect<StoredResponse | undefined, StoreUnavailable>
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
