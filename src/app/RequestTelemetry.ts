/**
 * What one request learns about itself on its way through the layers, for the metrics: which model it was for, and
 * how long it waited on upstreams. The HTTP layer provides a fresh record per request; outside a request the
 * reference's default is a sink nobody reads.
 */
import { Context, Effect } from "effect"

export interface RequestTelemetry {
  model: string | undefined
  upstreamSeconds: number
  /** Run once when the response has been sent in full (a stream's end) or the request was abandoned. */
  readonly atEnd: Array<Effect.Effect<void>>
}

export const newTelemetry = (): RequestTelemetry => ({ model: undefined, upstreamSeconds: 0, atEnd: [] })

export const CurrentTelemetry = Context.Reference<RequestTelemetry>("tollgate/app/CurrentTelemetry", {
  defaultValue: newTelemetry
})

/**
 * Runs `effect` when the current request's response ends. Outside a request (no telemetry provided) it never runs:
 * callers use it for what must outlive the handler, such as a rate-limit slot held until a stream's last byte.
 */
export const atResponseEnd = (effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.atEnd.push(effect)
  })

/** Notes the request's model (the first one named wins: a body's `model`, a multipart field, the Gemini path's). */
export const noteModel = (model: unknown): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    if (telemetry.model === undefined && typeof model === "string" && model.length > 0 && model.length <= 200) {
      telemetry.model = model
    }
  })

/** Adds time spent waiting on an upstream to the current request's share. */
export const noteUpstreamTime = (seconds: number): Effect.Effect<void> =>
  Effect.map(CurrentTelemetry, (telemetry) => {
    telemetry.upstreamSeconds += seconds
  })
