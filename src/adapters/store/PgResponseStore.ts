/**
 * Postgres side of stored Responses API responses (migration 0010): one row per response, its items indexed by id for
 * `item_reference`s. Model output is not checked at the edge the way client text is, so what is written is made
 * storable first: a NUL or an unpaired surrogate (which jsonb refuses) becomes U+FFFD.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { isStorableText, toStorableText } from "../../domain/StorableText.ts"
import { type JsonObject, ResponseStore, type StoredResponse } from "../../app/ports/ResponseStore.ts"
import { orUnavailable } from "./PgEventStore.ts"

/** JSON text of `value` that jsonb accepts. */
const storableJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) => (typeof v === "string" && !isStorableText(v) ? toStorableText(v) : v))

interface Row {
  readonly id: string
  readonly account_id: string
  readonly key_id: string
  readonly model: string
  readonly status: string
  readonly previous_response_id: string | null
  readonly created_at: Date
  readonly expires_at: Date
  readonly request: JsonObject
  readonly input_items: ReadonlyArray<JsonObject>
  readonly response: JsonObject
}

const parsed = <A>(value: A | string): A => (typeof value === "string" ? (JSON.parse(value) as A) : value)

const fromRow = (row: Row): StoredResponse => ({
  id: row.id,
  accountId: row.account_id,
  keyId: row.key_id,
  model: row.model,
  status: row.status,
  previousResponseId: row.previous_response_id ?? undefined,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
  request: parsed(row.request),
  inputItems: parsed(row.input_items),
  response: parsed(row.response)
})

export const layer = Layer.effect(
  ResponseStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const save = (response: StoredResponse, turnItems: ReadonlyArray<JsonObject>) => {
      const output = Array.isArray(response.response.output)
        ? (response.response.output as ReadonlyArray<JsonObject>)
        : []
      const items = [...turnItems, ...output].flatMap((item) =>
        typeof item.id === "string" ? [{ item_id: item.id, item }] : []
      )
      return sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`
              INSERT INTO responses (id, account_id, key_id, model, status, previous_response_id, created_at,
                expires_at, request, input_items, response)
              VALUES (${response.id}, ${response.accountId}::uuid, ${response.keyId}::uuid, ${response.model},
                ${response.status}, ${response.previousResponseId ?? null}, ${response.createdAt},
                ${response.expiresAt}, ${storableJson(response.request)}::jsonb,
                ${storableJson(response.inputItems)}::jsonb, ${storableJson(response.response)}::jsonb)
              ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, response = EXCLUDED.response`
            if (items.length === 0) return
            yield* sql`
              INSERT INTO response_items (account_id, item_id, response_id, item)
              SELECT ${response.accountId}::uuid, t.item_id, ${response.id}, t.item
              FROM jsonb_to_recordset(${storableJson(items)}::jsonb) AS t(item_id text, item jsonb)
              ON CONFLICT (account_id, item_id) DO NOTHING`
          })
        )
        .pipe(orUnavailable)
    }
    const find = (accountId: string, id: string, now: Date) =>
      sql<Row>`
        SELECT id, account_id::text, key_id::text, model, status, previous_response_id, created_at, expires_at,
          request, input_items, response
        FROM responses WHERE id = ${id} AND account_id = ${accountId}::uuid AND expires_at > ${now}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? undefined : fromRow(rows[0]))),
        orUnavailable
      )
    const findItems = (accountId: string, ids: ReadonlyArray<string>, now: Date) =>
      (ids.length === 0
        ? Effect.succeed<ReadonlyArray<{ item_id: string; item: JsonObject }>>([])
        : sql<{ item_id: string; item: JsonObject }>`
            SELECT i.item_id, i.item FROM response_items i JOIN responses r ON r.id = i.response_id
            WHERE i.account_id = ${accountId}::uuid AND i.item_id = ANY (${ids}::text[]) AND r.expires_at > ${now}`
      ).pipe(
        Effect.map((rows) => new Map(rows.map((row) => [row.item_id, parsed(row.item)] as const))),
        orUnavailable
      )
    const remove = (accountId: string, id: string) =>
      sql<{ id: string }>`DELETE FROM responses WHERE id = ${id} AND account_id = ${accountId}::uuid RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0),
        orUnavailable
      )
    const sweep = (now: Date) =>
      sql<{ id: string }>`DELETE FROM responses WHERE expires_at <= ${now} RETURNING id`.pipe(
        Effect.map((rows) => rows.length),
        orUnavailable
      )
    return ResponseStore.of({ save, find, findItems, remove, sweep })
  })
)
