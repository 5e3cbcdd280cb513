/**
 * Event schema evolution: events are stored in the version they were written in, and read in the current one.
 * Each upcaster lifts one version to the next; readers call `upcastLedgerEvent` and only ever see current shapes.
 *
 * | event | version | change |
 * |---|---|---|
 * | UsageRecalculated | 2 | adds `metrics` ({inputTokens, outputTokens, images, videoSeconds}) derived from `usage` |
 */
import { usageMetrics } from "./UsageMetrics.ts"

/** The version each event type is written in today (types not listed: 1). */
export const CURRENT_SCHEMA_VERSIONS: Readonly<Record<string, number>> = { UsageRecalculated: 2 }

export const currentSchemaVersion = (type: string): number => CURRENT_SCHEMA_VERSIONS[type] ?? 1

const upcasters: Readonly<
  Record<string, Readonly<Record<number, (data: Record<string, unknown>) => Record<string, unknown>>>>
> = {
  UsageRecalculated: {
    1: (data) => ({ ...data, metrics: usageMetrics(data.usage) })
  }
}

/** The event's data in the current version of its type. */
export const upcastLedgerEvent = (type: string, version: number, data: unknown): unknown => {
  const steps = upcasters[type]
  if (steps === undefined || typeof data !== "object" || data === null) return data
  let current = data as Record<string, unknown>
  for (let v = version; v < currentSchemaVersion(type); v++) {
    const step = steps[v]
    if (step !== undefined) current = step(current)
  }
  return current
}
