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
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`
  if (value instanceof Date) return JSON.stringify(value.toISOString())
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined && typeof v !== "function")
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
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
  createHash("sha256")
    .update(previous ?? "")
    .update("\n")
    .update(
      canonicalJson([
        event.stream,
        event.position,
        event.eventId,
        event.type,
        event.schemaVersion,
        event.data,
        event.metadata,
        event.recordedAt
      ])
    )
    .digest("hex")

/** One step of the global chain over event hashes in commit order. */
export const chainStep = (previous: string | null, eventHashHex: string): string =>
  createHash("sha256")
    .update(previous ?? "")
    .update(eventHashHex)
    .digest("hex")
