/**
 * The hash chain of the event store. An event's hash is SHA-256 over the previous event's hash in the same stream
 * (none for the first) and a canonical JSON of the event: stream, position, id, type, schema version, data, metadata
 * and recording time. Canonical means object keys sorted and no insignificant whitespace, computed on the values as
 * JavaScript sees them — the writer hashes what it sends, the verifier hashes what it reads back from jsonb, and the
 * two agree because jsonb round-trips JSON values exactly (money is always a decimal string, never a float).
 */
import { createHash } from "node:crypto"

export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") {
    return typeof value === "bigint" ? JSON.stringify(value.toString()) : (JSON.stringify(value) ?? "null")
  }
  if (Array.isArray(value)) {
    let out = "["
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i]
      out += (i === 0 ? "" : ",") + (item === undefined ? "null" : canonicalJson(item))
    }
    return `${out}]`
  }
  if (value instanceof Date) return JSON.stringify(value.toISOString())
  // Plain loops, no intermediate arrays of entries: this runs for every event written (the ledger's hot path).
  const record = value as Record<string, unknown>
  const keys = Object.keys(record).sort()
  let out = "{"
  let first = true
  for (const key of keys) {
    const v = record[key]
    if (v === undefined || typeof v === "function") continue
    out += `${first ? "" : ","}${JSON.stringify(key)}:${canonicalJson(v)}`
    first = false
  }
  return `${out}}`
}

export interface HashedFields {
  readonly stream: string
  readonly position: string
  readonly eventId: string
  readonly type: string
  readonly schemaVersion: number
  readonly data: unknown
  readonly metadata: unknown
  /** ISO 8601 with milliseconds, as written. */
  readonly recordedAt: string
}

/** The event's hash (hex), chained to `previous` (hex, or null for a stream's first event). */
export const eventHash = (previous: string | null, event: HashedFields): string =>
  eventHashOfJson(previous, event, canonicalJson(event.data), canonicalJson(event.metadata))

/**
 * The same hash from the canonical JSON of `data` and `metadata`, already computed by a writer that sends that text
 * to the database as well (one serialization per event instead of two). The canonical JSON of the field array is
 * assembled here exactly as `canonicalJson` would write it.
 */
export const eventHashOfJson = (
  previous: string | null,
  event: Omit<HashedFields, "data" | "metadata">,
  dataJson: string,
  metadataJson: string
): string =>
  createHash("sha256")
    .update(previous ?? "")
    .update("\n")
    .update(
      `[${JSON.stringify(event.stream)},${JSON.stringify(event.position)},${JSON.stringify(event.eventId)},` +
        `${JSON.stringify(event.type)},${JSON.stringify(event.schemaVersion)},${dataJson},${metadataJson},` +
        `${JSON.stringify(event.recordedAt)}]`
    )
    .digest("hex")

/** One step of the global chain over event hashes in commit order. */
export const chainStep = (previous: string | null, eventHashHex: string): string =>
  createHash("sha256")
    .update(previous ?? "")
    .update(eventHashHex)
    .digest("hex")
