/**
 * Postgres side of stored Responses API responses (migrations 0010, 0013): one row per response holding its own turn
 * and naming its predecessor, read back as a chain with one recursive query; its items indexed by id (where they are
 * in their response, not copies) for `item_reference`s. A delivered turn is written in one transaction with its bill
 * (the hold lease's progress, which the hold sweep settles at if this instance dies) and its conversation's new items.
 * Model output is not checked at the edge the way client text is, so what is written is made storable first: a NUL
 * or an unpaired surrogate (which jsonb refuses) becomes U+FFFD.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { parsed, storableJson } from "./StoredJson.ts"
import {
  type DeliveredTurn,
  type JsonObject,
  ResponseLeaseLost,
  type ResponseChain,
  ResponseStore,
  type StoredResponse
} from "../../app/ports/ResponseStore.ts"
import { orUnavailable } from "./PgEventStore.ts"
import { appendConversationItems } from "./PgConversations.ts"

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
  readonly turn_items: ReadonlyArray<JsonObject> | null
  readonly input_items: ReadonlyArray<JsonObject> | null
  readonly response: JsonObject
  readonly background: boolean
}

export const RESPONSE_COLUMNS = `id, account_id::text, key_id::text, model, status, previous_response_id, created_at,
  expires_at, request, turn_items, input_items, response, background`

export const fromRow = (row: Row): StoredResponse => ({
  id: row.id,
  accountId: row.account_id,
  keyId: row.key_id,
  model: row.model,
  status: row.status,
  previousResponseId: row.previous_response_id ?? undefined,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
  request: parsed(row.request),
  // A row written before migration 0013 holds the whole conversation in input_items.
  turnItems: parsed(row.turn_items ?? row.input_items ?? []),
  response: parsed(row.response),
  background: row.background
})

const outputOf = (response: JsonObject): ReadonlyArray<JsonObject> =>
  Array.isArray(response.output) ? (response.output as ReadonlyArray<JsonObject>) : []

/** Where each of the response's items with an id is: its turn's input, or its output. */
const itemIndex = (response: StoredResponse) =>
  [
    ...response.turnItems.map((item, position) => ({ item, position, source: "input" })),
    ...outputOf(response.response).map((item, position) => ({ item, position, source: "output" }))
  ].flatMap(({ item, position, source }) =>
    typeof item.id === "string" ? [{ item_id: item.id, source, position }] : []
  )

/** Inserts a response row (a background one is written here while queued, then updated by its worker). */
export const insertResponse = (sql: SqlClient.SqlClient, response: StoredResponse, holdId: string | null) => sql`
  INSERT INTO responses (id, account_id, key_id, model, status, previous_response_id, created_at, expires_at,
    request, turn_items, response, hold_id, background)
  VALUES (${response.id}, ${response.accountId}::uuid, ${response.keyId}::uuid, ${response.model},
    ${response.status}, ${response.previousResponseId ?? null}, ${response.createdAt}, ${response.expiresAt},
    ${storableJson(response.request)}::jsonb, ${storableJson(response.turnItems)}::jsonb,
    ${storableJson(response.response)}::jsonb, ${holdId}::uuid, ${response.background})`

export const layer = Layer.effect(
  ResponseStore,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient

    const writeResponse = (response: StoredResponse, holdId: string | null, owner: string | undefined) =>
      Effect.gen(function* () {
        if (owner === undefined) {
          yield* insertResponse(sql, response, holdId)
        } else {
          // A background run writes only while it still holds the lease of a response still running.
          const rows = yield* sql<{ id: string }>`
            UPDATE responses SET status = ${response.status}, response = ${storableJson(response.response)}::jsonb,
              hold_id = ${holdId}::uuid
            WHERE id = ${response.id} AND lease_owner = ${owner} AND status = 'in_progress'
            RETURNING id`
          if (rows.length === 0) return yield* new ResponseLeaseLost({ id: response.id })
        }
        const items = itemIndex(response)
        if (items.length === 0) return
        yield* sql`
          INSERT INTO response_items (account_id, item_id, response_id, source, position)
          SELECT ${response.accountId}::uuid, t.item_id, ${response.id}, t.source, t.position
          FROM jsonb_to_recordset(${JSON.stringify(items)}::jsonb) AS t(item_id text, source text, position integer)
          ON CONFLICT (account_id, item_id) DO NOTHING`
      })

    const commit = (turn: DeliveredTurn) =>
      sql
        .withTransaction(
          Effect.gen(function* () {
            const { response, outbox, conversation } = turn
            if (response !== undefined) yield* writeResponse(response, outbox?.holdId ?? null, turn.owner)
            if (outbox !== undefined) {
              yield* sql`
                INSERT INTO hold_leases (hold_id, account_id, lease_until, cost, usage, renewed_at)
                VALUES (${outbox.holdId}::uuid, ${outbox.accountId}::uuid, ${outbox.leaseUntil},
                  ${String(outbox.cost)}::bigint, ${storableJson(outbox.usage ?? null)}::jsonb, ${outbox.leaseUntil})
                ON CONFLICT (hold_id) DO UPDATE SET cost = EXCLUDED.cost, usage = EXCLUDED.usage,
                  lease_until = greatest(hold_leases.lease_until, EXCLUDED.lease_until)`
            }
            if (conversation !== undefined) yield* appendConversationItems(sql, conversation)
          })
        )
        .pipe(orUnavailable)

    const find = (accountId: string, id: string, now: Date) =>
      sql<Row>`
        SELECT ${sql.literal(RESPONSE_COLUMNS)}
        FROM responses WHERE id = ${id} AND account_id = ${accountId}::uuid AND expires_at > ${now}`.pipe(
        Effect.map((rows) => (rows[0] === undefined ? undefined : fromRow(rows[0]))),
        orUnavailable
      )

    // One query for the whole chain: the named response's row (as JSON) with its predecessors' items, oldest first.
    const chain = (accountId: string, id: string, now: Date) =>
      sql<{
        turn_items: ReadonlyArray<JsonObject> | null
        input_items: ReadonlyArray<JsonObject> | null
        output: ReadonlyArray<JsonObject> | null
        head: Row | string | null
      }>`
        WITH RECURSIVE chain AS (
          SELECT id, previous_response_id, turn_items, input_items, response -> 'output' AS output, 0 AS depth
          FROM responses WHERE id = ${id} AND account_id = ${accountId}::uuid AND expires_at > ${now}
          UNION ALL
          SELECT p.id, p.previous_response_id, p.turn_items, p.input_items, p.response -> 'output', c.depth + 1
          FROM chain c JOIN responses p ON p.id = c.previous_response_id
          WHERE c.turn_items IS NOT NULL AND p.account_id = ${accountId}::uuid AND p.expires_at > ${now}
        )
        SELECT c.turn_items, c.input_items, c.output,
          CASE WHEN c.depth = 0 THEN jsonb_build_object('id', r.id, 'account_id', r.account_id, 'key_id', r.key_id,
            'model', r.model, 'status', r.status, 'previous_response_id', r.previous_response_id,
            'created_at', r.created_at, 'expires_at', r.expires_at, 'request', r.request, 'turn_items', r.turn_items,
            'input_items', r.input_items, 'response', r.response, 'background', r.background) END AS head
        FROM chain c LEFT JOIN responses r ON c.depth = 0 AND r.id = c.id
        ORDER BY c.depth DESC`.pipe(
        Effect.map((rows): ResponseChain | undefined => {
          const head = rows.at(-1)?.head
          if (head === undefined || head === null) return undefined
          const history = rows.flatMap((row) => [
            ...parsed(row.turn_items ?? row.input_items ?? []),
            ...(parsed(row.output ?? []) as ReadonlyArray<JsonObject>)
          ])
          return { response: fromRow(parsed(head)), history }
        }),
        orUnavailable
      )

    const findItems = (accountId: string, ids: ReadonlyArray<string>, now: Date) =>
      (ids.length === 0
        ? Effect.succeed<ReadonlyArray<{ item_id: string; item: JsonObject }>>([])
        : sql<{ item_id: string; item: JsonObject }>`
            SELECT i.item_id, coalesce(i.item, CASE i.source WHEN 'input' THEN r.turn_items -> i.position
              ELSE r.response -> 'output' -> i.position END) AS item
            FROM response_items i JOIN responses r ON r.id = i.response_id
            WHERE i.account_id = ${accountId}::uuid AND i.item_id = ANY (${ids}::text[]) AND r.expires_at > ${now}`
      ).pipe(
        Effect.map(
          (rows) =>
            new Map(rows.flatMap((row) => (row.item === null ? [] : [[row.item_id, parsed(row.item)] as const])))
        ),
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

    return ResponseStore.of({
      commit,
      find,
      chain,
      findItems,
      remove,
      sweep
    })
  })
)
