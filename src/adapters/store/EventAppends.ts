/**
 * Appending to streams: the plan (positions, versions and the hash chain continued from each stream's head), the
 * heads locked in name order when writers collide, and the statements that insert a plan's events and move its heads.
 */
import type { ExpectedVersion, NewEvent } from "../../app/EventStore.ts"
import { Effect } from "effect"
import { canonicalJson, eventHashOfJson } from "./EventHash.ts"
import type { SqlClient, SqlError } from "effect/sql"
import { StreamVersionConflict } from "../../app/StoreErrors.ts"

export const UNIQUE_VIOLATION = "23505"

/** A field of a Postgres error, wherever sql-pg put it (the error, its reason's cause, or its cause). */
const errorField = (error: unknown, field: "code" | "constraint", valid: (value: string) => boolean) => {
  let current: unknown = error
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth += 1) {
    const value = (current as Record<string, unknown>)[field]
    if (typeof value === "string" && valid(value)) return value
    const reason = (current as { reason?: unknown }).reason
    current = (reason as { cause?: unknown } | undefined)?.cause ?? (current as { cause?: unknown }).cause
  }
  return undefined
}

/** The SQLSTATE of a Postgres error. */
export const sqlState = (error: unknown): string | undefined =>
  errorField(error, "code", (code) => /^[0-9A-Z]{5}$/.test(code))

/** The constraint a Postgres error names, if any. */
export const sqlConstraint = (error: unknown): string | undefined =>
  errorField(error, "constraint", (name) => name.length > 0)

/**
 * Unique constraints whose violation is about the data, not a race: a hold id already placed. The writer inserts a
 * hold placed in the batch without ON CONFLICT, so an id used before is refused by the database, alone, whether or
 * not the writer read (or remembered) the hold; every other unique violation is a position another writer took.
 */
const REFUSALS = new Set(["holds_pkey"])

export interface StreamAppend {
  readonly stream: string
  readonly expected: ExpectedVersion
  readonly events: ReadonlyArray<NewEvent>
}

/** An event row as JSON, expanded in SQL by `jsonb_to_recordset` (one parameter for any number of rows). */
export interface EventRecord {
  readonly stream_name: string
  readonly stream_position: string
  readonly event_id: string
  readonly event_type: string
  readonly schema_version: number
  /** The canonical JSON of the event's data (EventHash.ts): what is hashed is what is stored. */
  readonly dataJson: string
  /** The canonical JSON of its metadata. */
  readonly metadataJson: string
  readonly recorded_at: string
  /** Hex SHA-256 chained to the stream's previous event (EventHash.ts). */
  readonly hash: string
}

/** The records as one JSON array, the data and metadata inserted as the canonical text already made for the hash. */
const eventRecordsJson = (records: ReadonlyArray<EventRecord>): string => {
  let out = "["
  for (let i = 0; i < records.length; i++) {
    const r = records[i]
    out +=
      `${i === 0 ? "" : ","}{"stream_name":${JSON.stringify(r.stream_name)},` +
      `"stream_position":${JSON.stringify(r.stream_position)},"event_id":${JSON.stringify(r.event_id)},` +
      `"event_type":${JSON.stringify(r.event_type)},"schema_version":${JSON.stringify(r.schema_version)},` +
      `"data":${r.dataJson},"metadata":${r.metadataJson},"recorded_at":${JSON.stringify(r.recorded_at)},` +
      `"hash":${JSON.stringify(r.hash)}}`
  }
  return `${out}]`
}

/** The record columns as `jsonb_to_recordset` declares them. */
export const EVENT_RECORD_COLUMNS =
  "stream_name text, stream_position bigint, event_id uuid, event_type text, schema_version smallint, data jsonb, " +
  "metadata jsonb, recorded_at timestamptz, hash text"

/** `INSERT INTO events` from records: the events of a plan, one statement for any number of them. */
export const insertEventsSql = (sql: SqlClient.SqlClient, records: ReadonlyArray<EventRecord>) => sql`
  INSERT INTO events (stream_name, stream_position, event_id, event_type, schema_version, data, metadata, recorded_at,
    hash)
  SELECT stream_name, stream_position, event_id, event_type, schema_version, data, metadata, recorded_at,
    decode(hash, 'hex')
  FROM jsonb_to_recordset(${eventRecordsJson(records)}::jsonb) AS t(${sql.literal(EVENT_RECORD_COLUMNS)})`

/** Moves the heads of a plan's streams: version and the hash of the last event. */
export const upsertHeadsSql = (sql: SqlClient.SqlClient, plan: AppendPlan) => sql`
  INSERT INTO streams (stream_name, version, head_hash)
  SELECT name, version, decode(hash, 'hex')
  FROM jsonb_to_recordset(${recordsJson([...plan.versions].map(([name, version]) => ({ name, version: String(version), hash: plan.hashes.get(name) })))}::jsonb)
    AS h(name text, version bigint, hash text)
  ON CONFLICT (stream_name) DO UPDATE SET version = EXCLUDED.version, head_hash = EXCLUDED.head_hash`

/** Locked stream heads: each stream's version (undefined = no head row yet) and its last event's hash. */
export interface Heads extends ReadonlyMap<string, bigint | undefined> {
  readonly hashes: ReadonlyMap<string, string>
}

export interface AppendPlan {
  readonly records: Array<EventRecord>
  readonly versions: Map<string, bigint>
  /** Each appended stream's new head hash. */
  readonly hashes: Map<string, string>
}

/**
 * Checks every expected version against the locked heads and numbers the events. Pure: the caller has locked the
 * heads (`version` undefined = no head row yet) in the same transaction.
 */
export const planAppends = (
  appends: ReadonlyArray<StreamAppend>,
  heads: Heads,
  recordedAt: Date
): StreamVersionConflict | AppendPlan => {
  const current = new Map(heads)
  const versions = new Map<string, bigint>()
  const hashes = new Map<string, string>(heads.hashes)
  const records: Array<EventRecord> = []
  const at = recordedAt.toISOString()
  // A command's events share one metadata object: its canonical JSON is made once.
  let metadata: unknown
  let metadataJson = ""
  for (const append of appends) {
    const version = current.get(append.stream) ?? 0n
    const ok =
      append.expected === "any" || (append.expected === "no_stream" ? version === 0n : version === append.expected)
    if (!ok) return new StreamVersionConflict({ stream: append.stream, expected: String(append.expected) })
    let position = version
    let previous = hashes.get(append.stream) ?? null
    for (const event of append.events) {
      position += 1n
      const dataJson = canonicalJson(event.data)
      if (metadataJson === "" || event.metadata !== metadata) {
        metadata = event.metadata
        metadataJson = canonicalJson(event.metadata ?? {})
      }
      const fields = {
        stream: append.stream,
        position: position.toString(),
        eventId: event.eventId,
        type: event.type,
        schemaVersion: event.schemaVersion ?? 1,
        recordedAt: at
      }
      previous = eventHashOfJson(previous, fields, dataJson, metadataJson)
      records.push({
        stream_name: fields.stream,
        stream_position: fields.position,
        event_id: fields.eventId,
        event_type: fields.type,
        schema_version: fields.schemaVersion,
        dataJson,
        metadataJson,
        recorded_at: at,
        hash: previous
      })
    }
    current.set(append.stream, position)
    if (previous !== null) hashes.set(append.stream, previous)
    if (append.events.length > 0) versions.set(append.stream, position)
  }
  return { records, versions, hashes }
}

/** Locks the heads of `names` (in name order, so writers queue and never deadlock) and returns their versions. */
export const lockHeads = (
  sql: SqlClient.SqlClient,
  names: ReadonlyArray<string>
): Effect.Effect<Heads, SqlError.SqlError> =>
  Effect.map(
    sql<{ stream_name: string; version: bigint; head_hash: string | null }>`
      SELECT stream_name, version, encode(head_hash, 'hex') AS head_hash FROM streams
      WHERE stream_name = ANY(${names}::text[])
      ORDER BY stream_name FOR UPDATE`,
    (rows) => {
      const heads = new Map<string, bigint | undefined>(names.map((n) => [n, undefined]))
      const hashes = new Map<string, string>()
      for (const row of rows) {
        heads.set(row.stream_name, row.version)
        if (row.head_hash !== null) hashes.set(row.stream_name, row.head_hash)
      }
      return Object.assign(heads, { hashes })
    }
  )

/** A row for `jsonb_to_recordset`: bigints are written as decimal text by the caller (JSON numbers stop at 2^53). */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | ReadonlyArray<JsonValue>
  | { readonly [key: string]: JsonValue }
export type JsonRow = Readonly<Record<string, JsonValue>>

/**
 * Rows as one JSON document. No replacer: a replacer function takes `JSON.stringify` off its fast path, and this runs
 * for every ledger batch; the row type keeps bigints out instead.
 */
export const recordsJson = (records: ReadonlyArray<JsonRow>): string => JSON.stringify(records)

/** A concurrent writer took a position first: the same conflict an expected-version check reports. */
export const conflictOnUniqueViolation =
  (stream: string) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.mapError(effect, (error) =>
      sqlState(error) === UNIQUE_VIOLATION && !REFUSALS.has(sqlConstraint(error) ?? "")
        ? new StreamVersionConflict({ stream, expected: "concurrent append" })
        : error
    )

/**
 * Appends to several streams in the current transaction: locks their heads, checks every expected version, and
 * writes all events and the new heads in one statement. Returns each touched stream's new version.
 */
export const appendMany = (sql: SqlClient.SqlClient, appends: ReadonlyArray<StreamAppend>, recordedAt: Date) =>
  Effect.gen(function* () {
    const names = [...new Set(appends.map((a) => a.stream))].sort()
    // "any" promises no check, but a new stream has no head row to lock: create it first so concurrent "any"
    // appenders queue on it instead of colliding on the first position.
    const unchecked = [...new Set(appends.filter((a) => a.expected === "any").map((a) => a.stream))]
    if (unchecked.length > 0) {
      yield* sql`INSERT INTO streams (stream_name, version) SELECT unnest(${unchecked}::text[]), 0
        ON CONFLICT (stream_name) DO NOTHING`
    }
    const heads = yield* lockHeads(sql, names)
    const plan = planAppends(appends, heads, recordedAt)
    if (plan instanceof StreamVersionConflict) return yield* plan
    if (plan.records.length > 0) {
      yield* sql`WITH appended AS (${insertEventsSql(sql, plan.records)}) ${upsertHeadsSql(sql, plan)}`.pipe(
        conflictOnUniqueViolation(names.join(","))
      )
    }
    return plan.versions
  })
