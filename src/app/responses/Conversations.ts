/**
 * The Conversations API: conversations made, read, updated and deleted, their items added, listed, read and deleted,
 * each by the account that owns it only (any other account is answered as if it did not exist). A conversation costs
 * nothing itself: only the responses that use it are billed. Responses read and extend one through `conversation`
 * (TurnBuilder.ts, DeliveredTurn.ts).
 */
import { Clock, Context, Effect, Layer } from "effect"
import { randomUUID } from "node:crypto"
import type { AuthenticatedKey } from "../Keys.ts"
import { ConversationStore, type StoredConversation } from "../ports/ConversationStore.ts"
import type { JsonObject } from "../ports/ResponseStore.ts"
import type { StoreUnavailable } from "../StoreErrors.ts"
import { turnItems } from "./Conversation.ts"
import { ConversationItemNotFound, ConversationNotFound } from "./ResponsesErrors.ts"
import { type ListPage, listPage } from "../../domain/ListPage.ts"

type Found<A> = Effect.Effect<A, ConversationNotFound | StoreUnavailable>

/** A page of items as OpenAI lists them. */
export type ItemList = ListPage<JsonObject>

const list = (data: ReadonlyArray<JsonObject>, hasMore: boolean): ItemList => listPage(data, hasMore)

const shown = (conversation: StoredConversation): JsonObject => ({
  id: conversation.id,
  object: "conversation",
  created_at: Math.floor(conversation.createdAt.getTime() / 1000),
  metadata: conversation.metadata
})

export class Conversations extends Context.Service<
  Conversations,
  {
    readonly create: (
      key: AuthenticatedKey,
      items: ReadonlyArray<JsonObject>,
      metadata: Readonly<Record<string, string>>
    ) => Effect.Effect<JsonObject, StoreUnavailable>
    readonly retrieve: (key: AuthenticatedKey, id: string) => Found<JsonObject>
    readonly update: (
      key: AuthenticatedKey,
      id: string,
      metadata: Readonly<Record<string, string>>
    ) => Found<JsonObject>
    readonly remove: (key: AuthenticatedKey, id: string) => Found<JsonObject>
    readonly addItems: (key: AuthenticatedKey, id: string, items: ReadonlyArray<JsonObject>) => Found<ItemList>
    readonly listItems: (
      key: AuthenticatedKey,
      id: string,
      query: { readonly order: "asc" | "desc"; readonly limit: number; readonly after?: string | undefined }
    ) => Found<ItemList>
    readonly item: (
      key: AuthenticatedKey,
      id: string,
      itemId: string
    ) => Effect.Effect<JsonObject, ConversationNotFound | ConversationItemNotFound | StoreUnavailable>
    readonly removeItem: (
      key: AuthenticatedKey,
      id: string,
      itemId: string
    ) => Effect.Effect<JsonObject, ConversationNotFound | ConversationItemNotFound | StoreUnavailable>
  }
>()("tollgate/app/responses/Conversations") {
  static readonly layer = Layer.effect(
    Conversations,
    Effect.gen(function* () {
      const store = yield* ConversationStore
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
      const owned = (key: AuthenticatedKey, id: string) =>
        Effect.flatMap(store.find(key.accountId, id), (found) =>
          found === undefined ? Effect.fail(new ConversationNotFound({ id })) : Effect.succeed(found)
        )
      return Conversations.of({
        create: (key, items, metadata) =>
          Effect.gen(function* () {
            const conversation = {
              id: `conv_${randomUUID().replaceAll("-", "")}`,
              accountId: key.accountId,
              metadata,
              createdAt: yield* now
            }
            yield* store.create(conversation, turnItems(items))
            return shown(conversation)
          }),
        retrieve: (key, id) => Effect.map(owned(key, id), shown),
        update: (key, id, metadata) =>
          Effect.flatMap(store.update(key.accountId, id, metadata), (found) =>
            found === undefined ? Effect.fail(new ConversationNotFound({ id })) : Effect.succeed(shown(found))
          ),
        remove: (key, id) =>
          Effect.flatMap(store.remove(key.accountId, id), (removed) =>
            removed
              ? Effect.succeed({ id, object: "conversation.deleted", deleted: true })
              : Effect.fail(new ConversationNotFound({ id }))
          ),
        addItems: (key, id, items) =>
          Effect.gen(function* () {
            const added = turnItems(items)
            const appended = yield* store.append({
              conversationId: id,
              accountId: key.accountId,
              items: added,
              at: yield* now
            })
            if (!appended) return yield* new ConversationNotFound({ id })
            return list(added, false)
          }),
        listItems: (key, id, query) =>
          Effect.flatMap(store.page(key.accountId, id, query), (page) =>
            page === undefined
              ? Effect.fail(new ConversationNotFound({ id }))
              : Effect.succeed(list(page.data, page.hasMore))
          ),
        item: (key, id, itemId) =>
          Effect.gen(function* () {
            const found = yield* store.item(key.accountId, id, itemId)
            if (found !== undefined) return found
            yield* owned(key, id)
            return yield* new ConversationItemNotFound({ id, itemId })
          }),
        removeItem: (key, id, itemId) =>
          Effect.gen(function* () {
            const conversation = yield* owned(key, id)
            if (!(yield* store.removeItem(key.accountId, id, itemId))) {
              return yield* new ConversationItemNotFound({ id, itemId })
            }
            return shown(conversation)
          })
      })
    })
  )
}
