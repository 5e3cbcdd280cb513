/**
 * Postgres side of the Conversations API (migration 0015): a conversation row per conversation, its items in order
 * by position. Every statement names the account, so one account's conversation is invisible to every other.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ConversationStore, type StoredConversation } from "../../app/ports/ConversationStore.ts"
import type { ConversationAppend, JsonObject } from "../../app/ports/ResponseStore.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { parsed, storableJson } from "./StoredJson.ts"

interface Row {
  readonly id: string
  readonly account_id: string
  readonly metadata: Readonly<Record<string, string>> | string
  readonly created_at: Date
}

const fromRow = (row: Row): StoredConversation => ({
  id: row.id,
  accountId: row.account_id,
  metadata: parsed(row.metadata),
  createdAt: new Date(row.created_at)
})

/**
 * Appends `append.items` after the conversation's last item (in the caller's transaction, if any); an item whose id
 * the conversation already has is left as it was. False when the account has no such conversation.
 */
export const appendConversationItems = (sql: SqlClient.SqlClient, append: ConversationAppend) =>
  Effect.gen(function* () {
    const n = append.items.length
    const reserved = yield* sql<{ start: string }>`
      UPDATE conversations SET next_position = next_position + ${n}
      WHERE id = ${append.conversationId} AND account_id = ${append.accountId}::uuid
      RETURNING (next_position - ${n})::text AS start`
    const start = reserved[0]?.start
    if (start === undefined) return false
    if (n === 0) return true
    yield* sql`
      INSERT INTO conversation_items (conversation_id, position, item_id, item, created_at)
      SELECT ${append.conversationId}, ${start}::bigint + t.ord - 1, t.item ->> 'id', t.item, ${append.at}
      FROM jsonb_array_elements(${storableJson(append.items)}::jsonb) WITH ORDINALITY AS t(item, ord)
      ON CONFLICT (conversation_id, item_id) DO NOTHING`
    return true
  })

export const layer = Layer.effect(
  ConversationStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const find = (accountId: string, id: string) =>
      sql<Row>`
        SELECT id, account_id::text, metadata, created_at FROM conversations
        WHERE id = ${id} AND account_id = ${accountId}::uuid`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? undefined : fromRow(rows[0]))),
        orUnavailable
      )
    const owned = (accountId: string, id: string) => Effect.map(find(accountId, id), (found) => found !== undefined)
    return ConversationStore.of({
      create: (conversation, items) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              yield* sql`
                INSERT INTO conversations (id, account_id, metadata, created_at)
                VALUES (${conversation.id}, ${conversation.accountId}::uuid, ${storableJson(conversation.metadata)}::jsonb,
                  ${conversation.createdAt})`
              yield* appendConversationItems(sql, {
                conversationId: conversation.id,
                accountId: conversation.accountId,
                items,
                at: conversation.createdAt
              })
            })
          )
          .pipe(orUnavailable),
      find,
      update: (accountId, id, metadata) =>
        sql<Row>`
          UPDATE conversations SET metadata = ${storableJson(metadata)}::jsonb
          WHERE id = ${id} AND account_id = ${accountId}::uuid
          RETURNING id, account_id::text, metadata, created_at`.pipe(
          Effect.map((rows) => (rows[0] === undefined ? undefined : fromRow(rows[0]))),
          orUnavailable
        ),
      remove: (accountId, id) =>
        sql<{ id: string }>`
          DELETE FROM conversations WHERE id = ${id} AND account_id = ${accountId}::uuid RETURNING id`.pipe(
          Effect.map((rows) => rows.length > 0),
          orUnavailable
        ),
      items: (accountId, id) =>
        Effect.gen(function* () {
          // One statement: the conversation's existence and its items (a LEFT JOIN keeps an empty one).
          const rows = yield* sql<{ item: JsonObject | string | null }>`
            SELECT i.item FROM conversations c
            LEFT JOIN conversation_items i ON i.conversation_id = c.id
            WHERE c.id = ${id} AND c.account_id = ${accountId}::uuid
            ORDER BY i.position`
          if (rows.length === 0) return undefined
          return rows.flatMap((row) => (row.item === null ? [] : [parsed(row.item)]))
        }).pipe(orUnavailable),
      page: (accountId, id, query) =>
        Effect.gen(function* () {
          if (!(yield* owned(accountId, id))) return undefined
          const asc = query.order === "asc"
          const after =
            query.after === undefined
              ? sql`TRUE`
              : asc
                ? sql`position > (SELECT position FROM conversation_items WHERE conversation_id = ${id} AND item_id = ${query.after})`
                : sql`position < (SELECT position FROM conversation_items WHERE conversation_id = ${id} AND item_id = ${query.after})`
          const rows = yield* sql<{ item: JsonObject | string }>`
            SELECT item FROM conversation_items WHERE conversation_id = ${id} AND ${after}
            ORDER BY position ${sql.literal(asc ? "ASC" : "DESC")} LIMIT ${query.limit + 1}`
          const items = rows.map((row) => parsed(row.item))
          return { data: items.slice(0, query.limit), hasMore: items.length > query.limit }
        }).pipe(orUnavailable),
      append: (append) => appendConversationItems(sql, append).pipe(orUnavailable),
      item: (accountId, id, itemId) =>
        sql<{ item: JsonObject | string }>`
          SELECT i.item FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id
          WHERE c.id = ${id} AND c.account_id = ${accountId}::uuid AND i.item_id = ${itemId}`.pipe(
          Effect.map((rows) => (rows[0] === undefined ? undefined : parsed(rows[0].item))),
          orUnavailable
        ),
      removeItem: (accountId, id, itemId) =>
        sql<{ item_id: string }>`
          DELETE FROM conversation_items i USING conversations c
          WHERE c.id = i.conversation_id AND c.id = ${id} AND c.account_id = ${accountId}::uuid
            AND i.item_id = ${itemId}
          RETURNING i.item_id`.pipe(
          Effect.map((rows) => rows.length > 0),
          orUnavailable
        )
    })
  })
)
