/**
 * Where conversations of the Conversations API are kept, as a port: an ordered list of items per conversation, owned
 * by one account. `app/responses/Conversations.ts` decides what goes in; `adapters/store/PgConversations.ts` keeps it.
 */
import { Context, type Effect } from "effect"
import type { StoreUnavailable } from "../StoreErrors.ts"
import type { ConversationAppend, JsonObject } from "./ResponseStore.ts"

export interface StoredConversation {
  readonly id: string
  readonly accountId: string
  readonly metadata: Readonly<Record<string, string>>
  readonly createdAt: Date
}

export interface ConversationItemsQuery {
  readonly order: "asc" | "desc"
  readonly limit: number
  readonly after?: string | undefined
}

export class ConversationStore extends Context.Service<
  ConversationStore,
  {
    /** A new conversation with its first items, in one transaction. */
    readonly create: (
      conversation: StoredConversation,
      items: ReadonlyArray<JsonObject>
    ) => Effect.Effect<void, StoreUnavailable>
    readonly find: (accountId: string, id: string) => Effect.Effect<StoredConversation | undefined, StoreUnavailable>
    /** Replaces the metadata; undefined when there is no such conversation of the account. */
    readonly update: (
      accountId: string,
      id: string,
      metadata: Readonly<Record<string, string>>
    ) => Effect.Effect<StoredConversation | undefined, StoreUnavailable>
    readonly remove: (accountId: string, id: string) => Effect.Effect<boolean, StoreUnavailable>
    /** Every item, oldest first (a response's history); undefined when there is no such conversation. */
    readonly items: (
      accountId: string,
      id: string
    ) => Effect.Effect<ReadonlyArray<JsonObject> | undefined, StoreUnavailable>
    /** A page of items (one more than `limit` is read, to tell whether there are more); undefined: no conversation. */
    readonly page: (
      accountId: string,
      id: string,
      query: ConversationItemsQuery
    ) => Effect.Effect<
      { readonly data: ReadonlyArray<JsonObject>; readonly hasMore: boolean } | undefined,
      StoreUnavailable
    >
    /** Appends items; false when there is no such conversation of the account. */
    readonly append: (append: ConversationAppend) => Effect.Effect<boolean, StoreUnavailable>
    /** One item; undefined when the conversation or the item is not there. */
    readonly item: (
      accountId: string,
      id: string,
      itemId: string
    ) => Effect.Effect<JsonObject | undefined, StoreUnavailable>
    readonly removeItem: (accountId: string, id: string, itemId: string) => Effect.Effect<boolean, StoreUnavailable>
  }
>()("tollgate/app/ports/ConversationStore") {}
